import { expect, test } from "bun:test";
import { createScriptedUpstream } from "../scripted-upstream/create-scripted-upstream.ts";
import { createProfilePlan } from "../scripted-upstream/profile-plan.ts";
import { providerErrors } from "../scripted-upstream/provider-errors.ts";
import { createSharedQuota } from "../scripted-upstream/shared-quota.ts";
import { resolveUpstreamProfile, upstreamProfileChoiceSchema, upstreamProfiles } from "./upstream-profile.ts";

const chat = (content = "hello") =>
  new Request("http://scripted.test/v1/chat/completions", {
    method: "POST",
    body: JSON.stringify({ model: "qwen-test", stream: true, messages: [{ role: "user", content }] }),
  });

function upstreamWith(profile: Parameters<typeof resolveUpstreamProfile>[0], clock?: () => number) {
  return createScriptedUpstream({ readPixel: async () => [0, 0, 0], profile, ...(clock ? { clock } : {}) });
}

test("a named base with fields replaced keeps the base's other fields; a bad field is refused naming it", () => {
  const profile = resolveUpstreamProfile({ base: "loaded", head_ms: 0 });
  expect(profile.head_ms).toBe(0);
  expect(profile.quota).toEqual(upstreamProfiles.loaded.quota);
  expect(resolveUpstreamProfile(undefined)).toEqual(upstreamProfiles.instant);
  const bad = upstreamProfileChoiceSchema.safeParse({ base: "loaded", head_ms: -1 });
  expect(bad.success).toBe(false);
  expect(bad.error?.issues[0]?.path).toEqual(["head_ms"]);
  expect(upstreamProfileChoiceSchema.safeParse("busy").success).toBe(false);
  expect(
    upstreamProfileChoiceSchema.safeParse({ bursts: [{ kind: "allocation_quota", for_ms: 10, every_ms: 5 }] })
      .success,
  ).toBe(false);
});

test("a throttle window answers Model Studio's exact 429 body, then the answer flows again", async () => {
  let now = 1_000;
  const upstream = upstreamWith(
    { bursts: [{ kind: "allocation_quota", from_ms: 0, for_ms: 45_000 }] },
    () => now,
  );
  const refused = await upstream.fetch(chat());
  expect(refused.status).toBe(429);
  expect(await refused.text()).toBe(
    '{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}',
  );
  now += 45_000;
  const answered = await upstream.fetch(chat());
  expect(answered.status).toBe(200);
  expect(await answered.text()).toContain("data: [DONE]");
  expect(upstream.received.map((r) => r.profile)).toEqual(["allocation_quota", undefined]);
});

test("repeating windows: a 5xx burst every period, with the provider's body", () => {
  const plan = createProfilePlan(
    resolveUpstreamProfile({ bursts: [{ kind: "server_error", from_ms: 10, for_ms: 5, every_ms: 100 }] }),
    0,
  );
  expect([0, 10, 14, 15, 110, 116].map((t) => plan.burstAt(t))).toEqual([
    undefined,
    "server_error",
    "server_error",
    undefined,
    "server_error",
    undefined,
  ]);
  expect(providerErrors.server_error.status).toBe(500);
  expect(providerErrors.rate_quota.body.error.code).toBe("limit_requests");
});

test("the head waits head_ms and the answer's frames are spread over stream_ms", async () => {
  const upstream = upstreamWith({ head_ms: 150, stream_ms: 300 });
  const started = performance.now();
  const response = await upstream.fetch(chat());
  const head = performance.now() - started;
  await response.text();
  const total = performance.now() - started;
  expect(head).toBeGreaterThanOrEqual(140);
  expect(head).toBeLessThan(280);
  expect(total).toBeGreaterThanOrEqual(440);
  expect(upstream.received[0]?.completed).toBe(true);
});

test("a reset mid-stream sends part of the answer, then errors the body (no finish, no [DONE])", async () => {
  const upstream = upstreamWith({ bursts: [{ kind: "reset_mid_stream", for_ms: 60_000 }] });
  const response = await upstream.fetch(chat());
  expect(response.status).toBe(200);
  const reader = response.body?.getReader();
  let text = "";
  const failure = await (async () => {
    try {
      for (;;) {
        const { done, value } = (await reader?.read()) ?? { done: true, value: undefined };
        if (done) return undefined;
        text += new TextDecoder().decode(value);
      }
    } catch (error) {
      return error;
    }
  })();
  expect(failure).toBeInstanceOf(Error);
  expect(text).toContain("chat.completion.chunk");
  expect(text).not.toContain("[DONE]");
  expect(upstream.received[0]?.profile).toBe("reset_mid_stream");
});

test("the shared quota: one request over the concurrency gets 429 limit_requests; a slot frees when an answer ends", async () => {
  const upstream = upstreamWith({ stream_ms: 200, quota: { concurrent: 1, per_second: false } });
  const first = await upstream.fetch(chat());
  const second = await upstream.fetch(chat());
  expect(second.status).toBe(429);
  expect(((await second.json()) as { error: { code: string } }).error.code).toBe("limit_requests");
  expect(upstream.inFlight()).toBe(1);
  await first.text();
  expect(upstream.inFlight()).toBe(0);
  expect((await upstream.fetch(chat())).status).toBe(200);
});

test("requests and tokens per minute (and per second) are counted over a sliding window", () => {
  const perMinute = createSharedQuota({ requests_per_minute: 2, tokens_per_minute: 1000, per_second: false });
  expect(perMinute.admit(10, 0).admitted).toBe(true);
  expect(perMinute.admit(10, 1).admitted).toBe(true);
  expect(perMinute.admit(10, 2)).toEqual({ admitted: false, refusal: "rate_quota" });
  expect(perMinute.admit(10, 60_001).admitted).toBe(true);
  const tokens = createSharedQuota({ tokens_per_minute: 1000, per_second: false });
  expect(tokens.admit(5000, 0).admitted).toBe(true);
  expect(tokens.admit(1, 10)).toEqual({ admitted: false, refusal: "allocation_quota" });
  const perSecond = createSharedQuota({ requests_per_minute: 120, per_second: true });
  expect(perSecond.admit(1, 0).admitted).toBe(true);
  expect(perSecond.admit(1, 10).admitted).toBe(true);
  expect(perSecond.admit(1, 20)).toEqual({ admitted: false, refusal: "rate_quota" });
  expect(perSecond.admit(1, 1_001).admitted).toBe(true);
});

test("a queued fault still wins over the profile for its request", async () => {
  const upstream = upstreamWith({ bursts: [{ kind: "allocation_quota", for_ms: 60_000 }] });
  upstream.enqueueFaults([{ kind: "status", status: 503 }]);
  expect((await upstream.fetch(chat())).status).toBe(503);
  expect((await upstream.fetch(chat())).status).toBe(429);
});

test("POST /__script/profile switches the profile; a bad one is refused naming the field", async () => {
  const upstream = upstreamWith("instant");
  const set = (body: unknown) =>
    upstream.fetch(
      new Request("http://scripted.test/__script/profile", { method: "POST", body: JSON.stringify(body) }),
    );
  expect((await set({ base: "instant", bursts: [{ kind: "rate_quota", for_ms: 60_000 }] })).status).toBe(200);
  expect((await upstream.fetch(chat())).status).toBe(429);
  const bad = await set({ tokens_per_second: "fast" });
  expect(bad.status).toBe(400);
  expect(await bad.text()).toContain("tokens_per_second");
});

test("a profile changed while an answer is on its way leaves that answer's pace as it started", async () => {
  const upstream = upstreamWith({ head_ms: 50, stream_ms: 300 });
  const started = performance.now();
  const pending = upstream.fetch(chat());
  await Bun.sleep(20);
  upstream.setProfile("instant");
  await (await pending).text();
  expect(performance.now() - started).toBeGreaterThanOrEqual(330);
});
