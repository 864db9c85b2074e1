/**
 * The upstreams every new end-to-end test runs against (tests only): the `instant`
 * scripted model, and `loaded-short`, a loaded Model Studio scaled to a test's length
 * (docs/upstream-profiles.md, "In the end-to-end tests"): up to 0.5 s to the response
 * head (an answer that meets a throttle or a reset waits seconds), a token pace, a tokens-per-minute throttle
 * window answered with Model Studio's 429 body, a 500 burst and answers reset
 * mid-stream, all within the first seconds of a run and repeating, so even a short
 * episode meets each. A real endpoint
 * is slower and fails more; a test that only ever saw the instant model proved
 * nothing about retries, keepalives and records of retried attempts.
 *
 * `forEachUpstreamProfile` registers a test file's tests once per profile, so every
 * suite run covers both; `URA_E2E_UPSTREAM_PROFILES=instant` (a comma list) narrows a
 * local run. The evidence helpers say what holds under retries: exactly one answered
 * upstream request per delivered exchange, and every attempt the upstream saw recorded
 * with its exchange.
 */
import { expect } from "bun:test";
import type { UpstreamProfileChoice } from "../../src/config/upstream-profile.ts";
import type { ReceivedRequest } from "../../src/scripted-upstream/create-scripted-upstream.ts";
import type { Line } from "./episode-evidence.ts";

export type UpstreamProfileName = "instant" | "loaded-short";

export interface UpstreamProfileUnderTest {
  name: UpstreamProfileName;
  profile: UpstreamProfileChoice;
  /** The profile refuses, fails and delays requests: counts of upstream requests differ from turns. */
  loaded: boolean;
  /** Appended to a test's name. */
  label: string;
}

/**
 * `loaded` scaled down: the same kinds of trouble, seconds apart instead of minutes, at a
 * cost the suite can pay on every run. Windows count from the upstream's start: a
 * throttle of 1.5 s every 20 s (from 3 s), a 500 burst of 0.6 s every 20 s (from 8 s),
 * and one answer in ten reset mid-stream at any time; the key's quota as loaded's but for
 * the camera episodes' prompts. An answer that meets a throttle or a reset takes seconds
 * (the sidecar's backoff), so its client is kept waiting past head_after_ms.
 */
export const loadedShort: UpstreamProfileChoice = {
  base: "loaded",
  head_ms: 100,
  head_jitter_ms: 400,
  first_frame_ms: 50,
  tokens_per_second: 60,
  bursts: [
    { kind: "allocation_quota", from_ms: 3_000, for_ms: 1_500, every_ms: 20_000 },
    { kind: "server_error", from_ms: 8_000, for_ms: 600, every_ms: 20_000 },
    { kind: "reset_mid_stream", from_ms: 0, for_ms: 59_000, every_ms: 60_000, share: 0.1 },
  ],
  quota: { concurrent: 4, requests_per_minute: 120, tokens_per_minute: 1_000_000, per_second: false },
  seed: 7,
};

const all: UpstreamProfileUnderTest[] = [
  { name: "instant", profile: "instant", loaded: false, label: "" },
  { name: "loaded-short", profile: loadedShort, loaded: true, label: " [loaded-short upstream]" },
];

const chosen = process.env.URA_E2E_UPSTREAM_PROFILES?.split(",").map((name) => name.trim());
for (const name of chosen ?? [])
  if (!all.some((p) => p.name === name))
    throw new Error(`URA_E2E_UPSTREAM_PROFILES names ${name}: one of ${all.map((p) => p.name).join(", ")}`);

/** The profiles this run covers: both, unless URA_E2E_UPSTREAM_PROFILES narrows them. */
export const upstreamProfilesUnderTest: readonly UpstreamProfileUnderTest[] = all.filter(
  (p) => chosen === undefined || chosen.includes(p.name),
);

/** Registers `register`'s tests once per profile under test. */
export function forEachUpstreamProfile(register: (upstream: UpstreamProfileUnderTest) => void): void {
  for (const upstream of upstreamProfilesUnderTest) register(upstream);
}

/** A request the upstream answered whole (not refused by a burst or the quota, not reset, not left). */
export const answeredWhole = (r: ReceivedRequest): boolean =>
  r.completed && !r.aborted && r.fault === undefined && r.profile === undefined;

export type RetryEvidence = {
  /** Upstream requests received, answered whole, and failed by the profile (by kind). */
  received: number;
  answered: number;
  failedByProfile: Record<string, number>;
  /** Exchanges whose answer took more than one attempt. */
  retriedExchanges: number;
};

/**
 * What holds of an episode under any profile, from the upstream's list and the
 * episode's exchange records: every request the upstream received is an attempt
 * recorded with one exchange (none lost, none made up), each delivered exchange has
 * exactly one answered attempt, its last, and one upstream request answered whole
 * per delivered exchange. Returns the counts, for the test's log and its own checks.
 */
export function expectOneAnswerPerExchange(
  received: readonly ReceivedRequest[],
  exchanges: Line[],
): RetryEvidence {
  type Attempt = { ended: string };
  const responses = exchanges.filter((l) => l.stage === "upstream_response");
  const attempts = responses.flatMap((l) => (l.attempts as Attempt[] | undefined) ?? []);
  const delivered = new Set(
    exchanges.filter((l) => l.stage === "status" && l.status === "delivered").map((l) => l.exchange),
  );
  expect(attempts).toHaveLength(received.length);
  for (const line of responses.filter((l) => delivered.has(l.exchange))) {
    const ended = (line.attempts as Attempt[]).map((a) => a.ended);
    expect({ exchange: line.exchange, answered: ended.filter((e) => e === "answered").length }).toEqual({
      exchange: line.exchange,
      answered: 1,
    });
    expect(ended.at(-1)).toBe("answered");
  }
  const answered = received.filter(answeredWhole).length;
  expect(answered).toBe(delivered.size);
  const failedByProfile: Record<string, number> = {};
  for (const r of received)
    if (r.profile !== undefined) failedByProfile[r.profile] = (failedByProfile[r.profile] ?? 0) + 1;
  return {
    received: received.length,
    answered,
    failedByProfile,
    retriedExchanges: responses.filter((l) => ((l.attempts as Attempt[] | undefined)?.length ?? 0) > 1)
      .length,
  };
}

/**
 * The bodies the upstream received, each exchange's once: a retry resends its
 * exchange's body verbatim, so a run of equal consecutive bodies is one exchange (for a
 * client that sends one turn at a time, each turn's body different from the last).
 */
export function bodiesOncePerExchange(received: readonly ReceivedRequest[]): string[] {
  const bodies = received.map((r) => JSON.stringify(r.body));
  return bodies.filter((body, i) => i === 0 || body !== bodies[i - 1]);
}
