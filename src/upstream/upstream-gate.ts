/**
 * The seam between the upstream client and the budget every episode shares (one
 * provider key, one quota): before each attempt the client asks the gate for a
 * turn, and tells it how the attempt ended, so a throttle answer slows the pace
 * for everyone, not only the episode that met it.
 *
 * The client (upstream-client.ts) only calls this interface; the shared budget
 * (concurrency, requests and tokens per minute, a fair queue) implements it.
 * Without a configured budget the client uses `openGate`: every attempt goes at once.
 */

/** How an attempt ended, as far as the shared pace cares. */
export type AttemptOutcome =
  /** An answer (even one that failed validation): the provider took the request. */
  | "answered"
  /** The provider said slow down (HTTP 429, a throttling code). */
  | "throttled"
  /** Anything else: 5xx, reset, idle timeout, a final refusal, a cancel. */
  | "failed";

export type GateRequest = {
  episodeId: string;
  /** Input tokens estimated from the request body (for a tokens-per-minute limit). */
  estimatedTokens: number;
  /** Aborted when the episode is cancelled, the client leaves or the sidecar drains: the request leaves the queue at once. */
  signal: AbortSignal;
};

export interface UpstreamPermit {
  /** Milliseconds the request waited in the queue for this attempt. */
  readonly waitedMs: number;
  /** Called exactly once per permit, when the attempt's outcome is known. */
  release(outcome: AttemptOutcome): void;
}

export interface UpstreamGate {
  /** Resolves when the attempt may go; rejects with `signal.reason` if aborted while waiting. */
  admit(request: GateRequest): Promise<UpstreamPermit>;
}

/** No shared budget: every attempt goes at once. */
export const openGate: UpstreamGate = {
  async admit(request) {
    if (request.signal.aborted) throw request.signal.reason;
    return { waitedMs: 0, release() {} };
  },
};
