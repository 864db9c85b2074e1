/**
 * The shared upstream budget through the compiled binary: many episodes driven by
 * the official `openai` SDK (Responses, a chain of turns with previous_response_id)
 * against a scripted upstream in this process, which notes when each request
 * arrived and when its answer ended, so concurrency and rate are measured on the
 * upstream's side.
 *
 * - 20 concurrent episodes × 3 turns on a budget of 4 concurrent requests: all
 *   finish, exactly one upstream request per turn, never more than 4 at once, never
 *   more than the rate over sliding windows, and the longest queue wait within the
 *   bound docs/upstream-budget.md derives (k·E·T with k = 1, E = 20); each attempt's
 *   wait is on its chat span (OpenTelemetry, to a receiver in this process).
 *   Scaling: the 60 requests a minute is doubled to 120 so the test runs in
 *   about 30 s instead of a minute (the bound scales with it: T = H + 60000/RPM).
 * - Cancelling an episode whose request waits in the queue, or a shutdown drain: its
 *   client gets its answer at once, and nothing of it reaches the upstream.
 * - A 429 on one episode slows the others: their requests go at the lowered pace.
 * Needs `make build` (dist/ura-sidecar).
 */
import { afterEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import type { ReceivedRequest } from "../../src/scripted-upstream/create-scripted-upstream.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { records } from "../support/episode-evidence.ts";
import { startOtlpReceiver } from "../support/otlp-receiver.ts";
import {
  controlPassword,
  type LaunchInfo,
  type SidecarProcess,
  startSidecarProcess,
} from "../support/sidecar-process.ts";

const model = "ura-qwen";
/** Arrival times are taken in another process than the sidecar's timers: allow this much jitter. */
const jitterMs = 100;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(
  budget: Record<string, number>,
  profile: Parameters<typeof serveScriptedUpstream>[1] = {},
  env: Record<string, string> = {},
) {
  const upstream = await serveScriptedUpstream(0, profile);
  cleanups.push(() => upstream.stop());
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    config: { upstream: { budget, retry: { max_attempts: 3, initial_backoff_ms: 50 } } },
    args: ["--log-level", "warn"],
    env,
  });
  cleanups.push(() => sidecar.stop());
  return { upstream, sidecar, chats: () => upstream.scripted.received.filter(isChat) };
}

const isChat = (r: ReceivedRequest) => r.path.endsWith("/chat/completions");
const client = (episode: LaunchInfo) =>
  new OpenAI({ apiKey: episode.ingress_key, baseURL: episode.urls.responses, maxRetries: 0 });

/** Most requests in flight at once on the upstream, from each request's arrival to the end of its answer. */
function maxOverlap(requests: ReceivedRequest[]): number {
  const events = requests.flatMap((r) => [
    { at: Date.parse(r.at), delta: 1 },
    { at: Date.parse(r.ended_at ?? r.at), delta: -1 },
  ]);
  // An answer that ended in the same millisecond as the next arrival was over before it.
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let now = 0;
  let most = 0;
  for (const e of events) {
    now += e.delta;
    most = Math.max(most, now);
  }
  return most;
}

/** Most arrivals in any window of `windowMs`. */
function maxArrivals(requests: ReceivedRequest[], windowMs: number): number {
  const times = requests.map((r) => Date.parse(r.at)).sort((a, b) => a - b);
  let most = 0;
  let from = 0;
  for (const [i, t] of times.entries()) {
    while ((times[from] ?? 0) <= t - windowMs) from++;
    most = Math.max(most, i - from + 1);
  }
  return most;
}

async function metric(sidecar: SidecarProcess, name: string): Promise<number | undefined> {
  const text = await (
    await fetch(`${sidecar.url}/metrics`, { headers: { authorization: `Bearer ${controlPassword}` } })
  ).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(" ")[1]);
}

type Attempt = { attempt: number; ms: number; queue_ms?: number; status?: number };
const attemptsOf = (episode: LaunchInfo): Attempt[] =>
  records(episode.records_dir, "exchanges")
    .filter((l) => l.stage === "upstream_response")
    .flatMap((l) => l.attempts as Attempt[]);

describe("the shared upstream budget, through the binary", () => {
  test("20 concurrent episodes on 4 concurrent requests and 120 a minute: all finish, the upstream never sees more, no starvation", async () => {
    const episodes = 20;
    const turns = 3;
    const rpm = 120;
    const receiver = startOtlpReceiver();
    cleanups.push(() => receiver.stop());
    const { sidecar, chats } = await setUp(
      { max_concurrent: 4, requests_per_minute: rpm },
      { profile: { head_ms: 1500, head_jitter_ms: 1000 } },
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: "100" },
    );
    const launched = await Promise.all(Array.from({ length: episodes }, () => sidecar.createEpisode({})));
    const answers = await Promise.all(
      launched.map(async (episode, e) => {
        const openai = client(episode);
        const done: string[] = [];
        let previous: string | undefined;
        for (let turn = 1; turn <= turns; turn++) {
          const response = await openai.responses.create({
            model,
            input: `episode ${e}, turn ${turn}`,
            ...(previous ? { previous_response_id: previous } : {}),
          });
          previous = response.id;
          done.push(response.status ?? "none");
        }
        return done;
      }),
    );
    expect(answers).toEqual(Array.from({ length: episodes }, () => Array(turns).fill("completed")));

    const requests = chats();
    // One upstream request per turn: nothing was refused by the upstream or sent twice.
    expect(requests).toHaveLength(episodes * turns);
    expect(requests.filter((r) => r.profile !== undefined || !r.completed)).toEqual([]);
    // The concurrency limit was reached and never passed.
    expect(maxOverlap(requests)).toBe(4);
    for (const windowMs of [1_000, 5_000, 10_000, 20_000])
      expect(maxArrivals(requests, windowMs - jitterMs)).toBeLessThanOrEqual(1 + (rpm * windowMs) / 60_000);

    // No starvation: every wait within k·E·T, T = H + 60000/RPM (k = 1: one request at a time per episode).
    const attempts = launched.flatMap(attemptsOf);
    expect(attempts).toHaveLength(episodes * turns);
    const longestAttempt = Math.max(...attempts.map((a) => a.ms));
    const longestWait = Math.max(...attempts.map((a) => a.queue_ms ?? 0));
    const bound = episodes * (longestAttempt + 60_000 / rpm);
    console.log(
      `20 episodes × 3 turns: longest queue wait ${longestWait} ms (bound ${bound} ms), longest attempt ${longestAttempt} ms`,
    );
    expect(longestWait).toBeGreaterThan(0);
    expect(longestWait).toBeLessThanOrEqual(bound);
    expect(await metric(sidecar, "ura_upstream_queue_wait_seconds_count")).toBe(episodes * turns);
    expect(await metric(sidecar, "ura_upstream_queue_depth")).toBe(0);

    // Each chat span carries its attempt's wait; a wait above 0 is also an event at the span's start.
    expect(await sidecar.stop("SIGTERM")).toBe(0);
    const chatSpans = receiver.spans.filter((s) => s.name.startsWith("chat"));
    expect(chatSpans).toHaveLength(episodes * turns);
    const spanWaits = chatSpans.map((s) => Number(s.attributes["ura.upstream.queue_wait_ms"]));
    expect(spanWaits.sort((a, b) => a - b)).toEqual(
      attempts.map((a) => a.queue_ms ?? 0).sort((a, b) => a - b),
    );
    for (const span of chatSpans) {
      const wait = Number(span.attributes["ura.upstream.queue_wait_ms"]);
      const queued = span.events.filter((e) => e.name === "ura.upstream.queued");
      expect(queued.map((e) => Number(e.attributes["ura.upstream.queue_wait_ms"]))).toEqual(
        wait > 0 ? [wait] : [],
      );
    }
  }, 90_000);

  test("cancelling an episode whose request is queued answers its client at once; nothing of it goes upstream", async () => {
    const { upstream, sidecar, chats } = await setUp({ max_concurrent: 1 });
    await fetch(`${upstream.origin}/__script/faults`, {
      method: "POST",
      body: JSON.stringify({ faults: [{ kind: "slow", ms: 4_000 }] }),
    });
    const [holder, queued] = [await sidecar.createEpisode({}), await sidecar.createEpisode({})];
    const first = client(holder).responses.create({ model, input: "hold the only slot" });
    while (chats().length < 1) await Bun.sleep(10);
    const second = client(queued)
      .responses.create({ model, input: "wait for a turn" })
      .then(
        () => "answered",
        (error: unknown) => (error instanceof OpenAI.APIError ? error.message : String(error)),
      );
    await Bun.sleep(300);
    expect(await metric(sidecar, "ura_upstream_queue_depth")).toBe(1);
    const cancelledAt = Date.now();
    expect((await sidecar.control(`/episodes/${queued.id}/cancel`, { method: "POST" })).status).toBe(200);
    const outcome = await second;
    const answeredInMs = Date.now() - cancelledAt;
    expect(outcome).toContain("the episode was cancelled");
    expect(answeredInMs).toBeLessThan(1_000);
    expect(await metric(sidecar, "ura_upstream_queue_depth")).toBe(0);
    expect((await first).status).toBe("completed");
    // Only the holder's request ever reached the upstream.
    expect(chats()).toHaveLength(1);
    expect(JSON.stringify(chats()[0]?.body)).toContain("hold the only slot");
  }, 30_000);

  test("a shutdown drain takes a queued request out at once; nothing of it goes upstream", async () => {
    const { upstream, sidecar, chats } = await setUp({ max_concurrent: 1 });
    await fetch(`${upstream.origin}/__script/faults`, {
      method: "POST",
      body: JSON.stringify({ faults: [{ kind: "slow", ms: 4_000 }] }),
    });
    const [holder, queued] = [await sidecar.createEpisode({}), await sidecar.createEpisode({})];
    const settle = (request: Promise<unknown>) =>
      request.then(
        () => "answered",
        (error: unknown) =>
          error instanceof OpenAI.APIError ? `${error.status} ${error.message}` : String(error),
      );
    const first = settle(client(holder).responses.create({ model, input: "hold the only slot" }));
    while (chats().length < 1) await Bun.sleep(10);
    const second = settle(client(queued).responses.create({ model, input: "wait for a turn" }));
    await Bun.sleep(300);
    expect(await metric(sidecar, "ura_upstream_queue_depth")).toBe(1);
    const stoppedAt = Date.now();
    const exited = sidecar.stop("SIGTERM");
    const outcome = await second;
    expect(Date.now() - stoppedAt).toBeLessThan(1_000);
    expect(outcome).toContain("shutting down");
    await first;
    await exited;
    expect(chats()).toHaveLength(1);
  }, 30_000);

  test("a throttle told by an error event inside a 200 stream counts as a throttled attempt and lowers the pace, as a 429 does", async () => {
    const { upstream, sidecar, chats } = await setUp({ max_concurrent: 8, requests_per_minute: 60 });
    upstream.scripted.enqueueFaults([
      {
        kind: "stream_error",
        body: JSON.stringify({
          error: {
            code: "Throttling.AllocationQuota",
            message: "Allocated quota exceeded, please increase your quota limit.",
          },
        }),
      },
      {
        kind: "stream_error",
        body: JSON.stringify({ error: { code: "InternalError", message: "internal" } }),
      },
    ]);
    const episode = await sidecar.createEpisode({});
    expect(
      (await client(episode).responses.create({ model, input: "meet a throttle in the stream" })).status,
    ).toBe("completed");
    expect(chats().map((r) => r.fault ?? "answered")).toEqual(["stream_error", "stream_error", "answered"]);
    const attempts = records(episode.records_dir, "exchanges").find((l) => l.stage === "upstream_response")
      ?.attempts as { status: number; ended: string; cause: string }[];
    expect(attempts.map((a) => [a.status, a.ended, a.cause ?? "answered"])).toEqual([
      [200, "stream_error", "allocation_quota"],
      [200, "stream_error", "server_error"],
      [200, "answered", "answered"],
    ]);
    // The in-stream throttle counts; the in-stream server error does not.
    expect(await metric(sidecar, "ura_upstream_throttled_attempts_total")).toBe(1);
    expect(await metric(sidecar, "ura_upstream_pace_ratio")).toBeLessThan(1);
  }, 30_000);

  test("a 429 on one episode slows the other episodes' pace", async () => {
    const rpm = 60;
    const { upstream, sidecar, chats } = await setUp({ max_concurrent: 8, requests_per_minute: rpm });
    await fetch(`${upstream.origin}/__script/faults`, {
      method: "POST",
      body: JSON.stringify({
        faults: [{ kind: "status", status: 429, message: "You exceeded your current quota" }],
      }),
    });
    const [throttled, ...others] = await Promise.all(
      Array.from({ length: 5 }, () => sidecar.createEpisode({})),
    );
    if (!throttled) throw new Error("no episode");
    expect((await client(throttled).responses.create({ model, input: "meet a throttle" })).status).toBe(
      "completed",
    );
    expect(chats().map((r) => r.fault ?? "answered")).toEqual(["status", "answered"]);
    expect(await metric(sidecar, "ura_upstream_throttled_attempts_total")).toBe(1);
    expect(await metric(sidecar, "ura_upstream_pace_ratio")).toBeLessThan(1);

    // The other episodes never met a throttle, yet their requests go at the lowered pace: at
    // full pace their four arrivals would span 3 × 1000 ms; after the cut to 0.7 about 4000 ms
    // (each answer adds 1/(8·w) back, w = 8·pace in flight: 0.72, 0.74, 0.77, 0.79 of 60 a
    // minute). The span, not each gap, is compared: arrival jitter moves time between gaps.
    const before = chats().length;
    const answers = await Promise.all(
      others.map((episode, i) => client(episode).responses.create({ model, input: `other ${i}` })),
    );
    expect(answers.map((a) => a.status)).toEqual(others.map(() => "completed"));
    const arrivals = chats()
      .slice(before)
      .map((r) => Date.parse(r.at));
    expect(arrivals).toHaveLength(others.length);
    const gaps = arrivals.slice(1).map((t, i) => t - (arrivals[i] ?? 0));
    console.log(`arrival gaps after a throttle: ${gaps.join(", ")} ms (full pace: ${60_000 / rpm} ms)`);
    const fullPaceSpan = gaps.length * (60_000 / rpm);
    expect((arrivals.at(-1) ?? 0) - (arrivals[0] ?? 0)).toBeGreaterThan(fullPaceSpan * 1.2);
    for (const episode of others) expect(attemptsOf(episode).map((a) => a.status)).toEqual([200]);
  }, 30_000);
});
