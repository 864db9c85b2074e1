/**
 * Upstream timing and the provider's error model, against the compiled binary and the
 * scripted upstream on a loopback port (short timings in the config stand in for the
 * defaults): a wrong key and an account in arrears fail at once, naming the cause; a
 * per-minute-token throttle (Model Studio's 429 insufficient_quota) is ridden out; a slow
 * answer that keeps streaming is not cut; a silent upstream is cut at the idle timeout
 * and asked again. Every attempt is in the records with how it ended.
 * Needs `make build` (dist/ura-sidecar).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import type { Fault } from "../../src/scripted-upstream/faults.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { ingressKits, readJsonLines } from "../support/ingress-kit.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

setDefaultTimeout(60_000);

const idleTimeoutMs = 1_000;
const initialBackoffMs = 250;
const maxBackoffMs = 1_000;
/** The sidecar's upstream key (test/support/sidecar-process.ts): it must never reach a client. */
const upstreamKey = "sk-test-upstream-secret-key";

let upstream: Awaited<ReturnType<typeof serveScriptedUpstream>>;
let sidecar: SidecarProcess;

beforeAll(async () => {
  upstream = await serveScriptedUpstream();
  sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    config: {
      log_level: "warn",
      upstream: {
        idle_timeout_ms: idleTimeoutMs,
        deadline_ms: 30_000,
        retry: { initial_backoff_ms: initialBackoffMs, max_backoff_ms: maxBackoffMs, max_wait_ms: 15_000 },
      },
    },
  });
});
afterAll(async () => {
  await sidecar.stopCleanly();
  upstream.stop();
});

const kit = ingressKits.responses;

function send(episode: LaunchInfo) {
  return fetch(`${sidecar.url}${kit.path(episode.id, "qwen3-vl-plus", false)}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...kit.headers(episode.ingress_key) },
    body: JSON.stringify(kit.firstTurn(false)),
  });
}

async function exchange(faults: Fault[], whileWaiting?: (episode: LaunchInfo) => Promise<void>) {
  upstream.scripted.received.length = 0;
  await fetch(`${upstream.origin}/__script/reset`, { method: "POST" });
  upstream.scripted.enqueueFaults(faults);
  const episode = await sidecar.createEpisode();
  const started = Date.now();
  const pending = send(episode);
  await whileWaiting?.(episode);
  const res = await pending;
  const body = await res.json();
  return { episode, res, body, ms: Date.now() - started };
}

type Attempt = Record<string, unknown>;
async function responseOf(episode: LaunchInfo): Promise<Record<string, unknown> | undefined> {
  const lines = await readJsonLines(join(episode.records_dir, "exchanges.jsonl"));
  return lines.find((l) => l.stage === "upstream_response");
}
async function attemptsOf(episode: LaunchInfo): Promise<Attempt[]> {
  return ((await responseOf(episode))?.attempts as Attempt[] | undefined) ?? [];
}
/** Until the scripted upstream has received `n` requests (5 s at most). */
async function received(n: number): Promise<void> {
  for (let waited = 0; upstream.scripted.received.length < n && waited < 5_000; waited += 20)
    await Bun.sleep(20);
}

const finalCases = [
  {
    name: "an invalid API key (401 InvalidApiKey)",
    status: 401,
    body: { code: "InvalidApiKey", message: `Invalid API-key provided: ${upstreamKey}`, request_id: "r-1" },
    says: "the upstream rejected the API key (InvalidApiKey, HTTP 401)",
    cause: "invalid_api_key",
  },
  {
    name: "an account in arrears (403 Arrearage)",
    status: 403,
    body: { code: "Arrearage", message: "Access denied, please make sure your account is in good standing." },
    says: "the provider account is in arrears (Arrearage, HTTP 403)",
    cause: "arrearage",
  },
];

for (const c of finalCases) {
  test(`${c.name} fails at once: one attempt, a final 400 naming the cause, the episode in provider_error`, async () => {
    const { episode, res, body, ms } = await exchange([
      { kind: "status", status: c.status, body: JSON.stringify(c.body) },
    ]);
    expect(res.status).toBe(400);
    const error = kit.readError(res.status, body);
    expect(error.message).toContain(c.says);
    expect(JSON.stringify(body)).not.toContain(upstreamKey);
    expect(upstream.scripted.received).toHaveLength(1);
    expect(ms).toBeLessThan(initialBackoffMs * 4);
    const status = await sidecar.episode(episode.id);
    expect(status.state).toBe("failed");
    expect(status.failure).toMatchObject({ reason: "provider_error" });
    expect(await attemptsOf(episode)).toEqual([
      expect.objectContaining({
        attempt: 1,
        status: c.status,
        ended: "http_error",
        classification: "final",
        cause: c.cause,
      }),
    ]);
  });
}

test("a 429 insufficient_quota throttle lasting 5 s is ridden out, the answer delivered, attempts within the schedule", async () => {
  const tpm = JSON.stringify({
    error: {
      message: "You exceeded your current quota, please check your plan and billing details.",
      type: "insufficient_quota",
      code: "insufficient_quota",
    },
  });
  const windowMs = 5_000;
  const { episode, res, ms } = await exchange([{ kind: "status", status: 429, body: tpm, for_ms: windowMs }]);
  expect(res.status).toBe(200);
  expect(ms).toBeGreaterThanOrEqual(windowMs);
  const attempts = await attemptsOf(episode);
  // At most one attempt per backoff floor over the window, plus the first and the answered one.
  expect(attempts.length).toBeLessThanOrEqual(windowMs / initialBackoffMs + 2);
  expect(attempts.length).toBeGreaterThanOrEqual(windowMs / maxBackoffMs);
  expect(upstream.scripted.received).toHaveLength(attempts.length);
  const throttled = attempts.slice(0, -1);
  for (const a of throttled) {
    expect(a).toMatchObject({
      status: 429,
      ended: "http_error",
      provider_code: "insufficient_quota",
      classification: "transient",
      cause: "allocation_quota",
    });
    expect(a.retry_in_ms).toBeGreaterThanOrEqual(initialBackoffMs);
    expect(a.retry_in_ms).toBeLessThanOrEqual(maxBackoffMs);
  }
  expect(attempts.at(-1)).toMatchObject({ status: 200, ended: "answered" });
  expect((await sidecar.episode(episode.id)).state).not.toBe("failed");
});

test("a slow answer (head after 0.8 s, then a trickle over ~5 s) is not cut: one attempt, delivered", async () => {
  const { episode, res, ms } = await exchange([{ kind: "trickle", head_ms: 800, every_ms: 300, chunks: 10 }]);
  expect(res.status).toBe(200);
  expect(ms).toBeGreaterThan(idleTimeoutMs * 4);
  expect(upstream.scripted.received).toHaveLength(1);
  expect(upstream.scripted.received[0]?.aborted).toBe(false);
  const [attempt] = await attemptsOf(episode);
  expect(attempt).toMatchObject({ attempt: 1, status: 200, ended: "answered" });
  expect(attempt?.first_byte_ms).toBeGreaterThanOrEqual(700);
});

test("a silent upstream is cut at the idle timeout and asked again; both attempts recorded", async () => {
  const { episode, res } = await exchange([{ kind: "timeout" }]);
  expect(res.status).toBe(200);
  expect(upstream.scripted.received).toHaveLength(2);
  expect(upstream.scripted.received[0]?.aborted).toBe(true);
  const attempts = await attemptsOf(episode);
  expect(attempts).toEqual([
    expect.objectContaining({
      ended: "idle_timeout",
      idle_ms: idleTimeoutMs,
      classification: "transient",
      cause: "idle_timeout",
    }),
    expect.objectContaining({ ended: "answered", status: 200 }),
  ]);
  expect(attempts[0]?.ms).toBeGreaterThanOrEqual(idleTimeoutMs - 10);
  expect(attempts[0]?.retry_in_ms).toBeGreaterThanOrEqual(initialBackoffMs);
});

test("an episode cancelled while its upstream attempt is in flight: the attempt is recorded as cancelled", async () => {
  const { episode, res } = await exchange(
    [{ kind: "trickle", head_ms: 0, every_ms: 200, chunks: 50 }],
    async (e) => {
      await received(1);
      await Bun.sleep(300);
      expect((await sidecar.control(`/episodes/${e.id}/cancel`, { method: "POST" })).status).toBe(200);
    },
  );
  expect(res.status).toBe(400);
  expect(upstream.scripted.received).toHaveLength(1);
  const attempts = await attemptsOf(episode);
  expect(attempts).toEqual([expect.objectContaining({ attempt: 1, status: 200, ended: "cancelled" })]);
  expect(attempts[0]?.first_byte_ms).toBeDefined();
  expect(await responseOf(episode)).toMatchObject({
    error: "upstream request cancelled: the episode was cancelled",
    cancelled: { at: "attempt", reason: "episode_cancelled" },
  });
});

test("an episode cancelled while waiting to retry: the line says the backoff, the failed attempt as it ended", async () => {
  const { episode, res } = await exchange([{ kind: "status", status: 503, retry_after: "5" }], async (e) => {
    await received(1);
    await Bun.sleep(300);
    expect((await sidecar.control(`/episodes/${e.id}/cancel`, { method: "POST" })).status).toBe(200);
  });
  expect(res.status).toBe(400);
  expect(upstream.scripted.received).toHaveLength(1);
  expect(await responseOf(episode)).toMatchObject({
    attempts: [expect.objectContaining({ attempt: 1, status: 503, ended: "http_error", retry_in_ms: 5_000 })],
    error: "upstream request cancelled: the episode was cancelled",
    cancelled: { at: "backoff", reason: "episode_cancelled" },
  });
});

test("a client that closes its request while the exchange waits to retry: the line says so", async () => {
  upstream.scripted.received.length = 0;
  await fetch(`${upstream.origin}/__script/reset`, { method: "POST" });
  upstream.scripted.enqueueFaults([{ kind: "status", status: 503, retry_after: "5" }]);
  const episode = await sidecar.createEpisode();
  const client = new AbortController();
  const pending = fetch(`${sidecar.url}${kit.path(episode.id, "qwen3-vl-plus", false)}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...kit.headers(episode.ingress_key) },
    body: JSON.stringify(kit.firstTurn(false)),
    signal: client.signal,
  }).catch((error: unknown) => error);
  await received(1);
  await Bun.sleep(300);
  client.abort();
  expect(await pending).toBeInstanceOf(Error);
  for (let waited = 0; (await responseOf(episode)) === undefined && waited < 5_000; waited += 20)
    await Bun.sleep(20);
  expect(await responseOf(episode)).toMatchObject({
    error: "upstream request cancelled: the client closed the request",
    cancelled: { at: "backoff", reason: "client_closed" },
  });
  expect(upstream.scripted.received).toHaveLength(1);
});
