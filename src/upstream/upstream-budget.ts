/**
 * The upstream budget every episode shares (one provider key, one quota): at most
 * `max_concurrent` attempts in flight, and optionally no more requests and input
 * tokens per minute than configured, paced smoothly (rate-bucket.ts) because the
 * provider enforces its per-minute limits per second as well. Attempts that cannot
 * go yet wait in a fair queue (fair-queue.ts: episodes in turn, oldest request
 * first) instead of failing; an aborted wait (episode cancelled, client gone,
 * shutdown drain) leaves the queue at once. A throttle answer slows everyone
 * (aimd-pace.ts): the concurrency and both rates are scaled by the shared pace.
 *
 * Strict turns: the request at the head of the ring waits for its own turn even
 * when a smaller one behind it would fit the token rate now, so a large request is
 * never starved by small ones. Bound on a wait (docs/upstream-budget.md): a request
 * that reaches the head of its episode with E episodes waiting ahead of it is
 * admitted after at most E other admissions.
 *
 * Time is injected (`timers`) so the tests run on a fake clock.
 */
import { defaultPaceSettings, initialPace, nextPace, type Pace, type PaceSettings } from "./aimd-pace.ts";
import { createFairQueue } from "./fair-queue.ts";
import { createRateBucket, type RateBucket } from "./rate-bucket.ts";
import type { AttemptOutcome, GateRequest, UpstreamGate, UpstreamPermit } from "./upstream-gate.ts";

export type UpstreamBudgetSettings = {
  max_concurrent: number;
  requests_per_minute?: number | undefined;
  tokens_per_minute?: number | undefined;
};

export type BudgetTimers = {
  now: () => number;
  /** Runs `run` after `ms`; the returned function cancels it. */
  setTimeout: (run: () => void, ms: number) => () => void;
};

/** What the budget is doing right now (metrics read it at scrape time). */
export type UpstreamBudgetState = {
  /** Attempts waiting for their turn. */
  waiting: number;
  inFlight: number;
  /** Fraction of the configured budget in effect (1 = full pace; lower after throttles). */
  pace: number;
  /** Concurrency in effect: max_concurrent scaled by the pace, at least 1. */
  maxConcurrent: number;
  /** Rates in effect, when configured. */
  requestsPerMinute?: number;
  tokensPerMinute?: number;
};

export interface UpstreamBudget extends UpstreamGate {
  state(): UpstreamBudgetState;
}

const minute = 60_000;

export const realTimers: BudgetTimers = {
  now: () => performance.timeOrigin + performance.now(),
  setTimeout: (run, ms) => {
    const timer = setTimeout(run, ms);
    return () => clearTimeout(timer);
  },
};

type Waiter = {
  request: GateRequest;
  enqueuedAt: number;
  admit: (permit: UpstreamPermit) => void;
  onAbort: () => void;
};

export function createUpstreamBudget(
  settings: UpstreamBudgetSettings,
  options: { timers?: BudgetTimers; pace?: PaceSettings } = {},
): UpstreamBudget {
  const timers = options.timers ?? realTimers;
  const paceSettings = options.pace ?? defaultPaceSettings;
  const queue = createFairQueue<Waiter>();
  let pace: Pace = initialPace();
  // Smoothed time of answered attempts (TCP's SRTT, gain 1/8): how long one round of answers takes.
  let roundTripMs = 0;
  let inFlight = 0;
  let cancelTimer: (() => void) | undefined;

  const rpm = settings.requests_per_minute;
  const tpm = settings.tokens_per_minute;
  const start = timers.now();
  // One request of burst: requests go evenly spaced. A second's worth of tokens: the provider's own per-second share.
  const requests: RateBucket | undefined =
    rpm === undefined ? undefined : createRateBucket({ perMs: rpm / minute, capacity: 1, now: start });
  const tokens: RateBucket | undefined =
    tpm === undefined
      ? undefined
      : createRateBucket({ perMs: tpm / minute, capacity: Math.max(1, tpm / 60), now: start });

  const concurrency = () => Math.max(1, Math.floor(settings.max_concurrent * pace.value));

  function setPace(next: Pace) {
    if (next === pace) return;
    pace = next;
    const now = timers.now();
    if (rpm !== undefined) requests?.setRate((rpm * pace.value) / minute, now);
    if (tpm !== undefined) tokens?.setRate((tpm * pace.value) / minute, now);
  }

  function permitFor(waiter: Waiter, admittedAt: number): UpstreamPermit {
    const admittedEpoch = pace.epoch;
    let released = false;
    return {
      waitedMs: Math.max(0, Math.round(admittedAt - waiter.enqueuedAt)),
      release(outcome: AttemptOutcome) {
        if (released) return;
        released = true;
        inFlight -= 1;
        const now = timers.now();
        if (outcome === "answered") {
          const took = now - admittedAt;
          roundTripMs = roundTripMs === 0 ? took : roundTripMs + (took - roundTripMs) / 8;
        }
        setPace(
          nextPace(pace, { outcome, admittedEpoch, now, roundTripMs }, settings.max_concurrent, paceSettings),
        );
        serve();
      },
    };
  }

  /** Admits waiting requests in turn while the budget allows; otherwise waits for a release or the rate. */
  function serve() {
    cancelTimer?.();
    cancelTimer = undefined;
    for (let head = queue.peek(); head; head = queue.peek()) {
      if (inFlight >= concurrency()) return;
      const now = timers.now();
      const cost = head.request.estimatedTokens;
      const wait = Math.max(requests?.waitFor(1, now) ?? 0, tokens?.waitFor(cost, now) ?? 0);
      if (wait > 0) {
        cancelTimer = timers.setTimeout(serve, wait);
        return;
      }
      requests?.tryTake(1, now);
      tokens?.tryTake(cost, now);
      queue.shift();
      inFlight += 1;
      head.request.signal.removeEventListener("abort", head.onAbort);
      head.admit(permitFor(head, now));
    }
  }

  return {
    admit(request) {
      if (request.signal.aborted) return Promise.reject(request.signal.reason);
      return new Promise<UpstreamPermit>((resolve, reject) => {
        const waiter: Waiter = {
          request,
          enqueuedAt: timers.now(),
          admit: resolve,
          onAbort: () => {
            if (!queue.remove(request.episodeId, waiter)) return;
            reject(request.signal.reason);
            // The head may have changed: the next in turn may fit now.
            serve();
          },
        };
        request.signal.addEventListener("abort", waiter.onAbort, { once: true });
        queue.push(request.episodeId, waiter);
        serve();
      });
    },
    state() {
      return {
        waiting: queue.size,
        inFlight,
        pace: pace.value,
        maxConcurrent: concurrency(),
        ...(rpm === undefined ? {} : { requestsPerMinute: rpm * pace.value }),
        ...(tpm === undefined ? {} : { tokensPerMinute: tpm * pace.value }),
      };
    },
  };
}
