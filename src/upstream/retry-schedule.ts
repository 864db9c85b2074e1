/**
 * When to try a transient upstream failure again, as pure functions of the policy,
 * the clock and a random source (injected, so the schedule is testable):
 * exponential backoff with full jitter above a floor, at least what the provider's
 * `Retry-After` asks, and only within the retry time budget (`upstream.retry.max_wait_ms`,
 * counted from the exchange's first failure) and the exchange's deadline. A count cap
 * (`max_attempts`) applies only when configured. See docs/upstream-errors.md.
 */
import type { RetryPolicy } from "../config/schema.ts";

/**
 * Milliseconds a `Retry-After` header asks to wait: delta-seconds or an HTTP date
 * (RFC 9110 §10.2.3); undefined when absent or unreadable, 0 for a date in the past.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (!/[a-z]/i.test(text) || Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * The wait before retry number `retry` (1 = the first retry): uniform between
 * `initial_backoff_ms` and min(`max_backoff_ms`, `initial_backoff_ms`·2^retry). The
 * floor keeps retries from bunching at zero (so attempts over a window stay bounded:
 * at most one per floor), the jitter spreads episodes that met the same throttle.
 */
export function jitteredBackoff(policy: RetryPolicy, retry: number, random: () => number): number {
  const floor = Math.min(policy.initial_backoff_ms, policy.max_backoff_ms);
  const ceiling = Math.max(floor, Math.min(policy.max_backoff_ms, policy.initial_backoff_ms * 2 ** retry));
  return Math.round(floor + random() * (ceiling - floor));
}

export type RetryDecision = { retry: true; waitMs: number } | { retry: false; reason: string };

export type RetryInput = {
  policy: RetryPolicy;
  /** Attempts made so far in this exchange (the next retry is number `attemptsMade`). */
  attemptsMade: number;
  /** What the provider's Retry-After asked for, parsed. */
  retryAfterMs?: number;
  random: () => number;
  now: number;
  /** When the exchange's first failed attempt ended: the retry budget counts from here. */
  firstFailureAt: number;
  /** When the exchange's deadline (upstream.deadline_ms) passes. */
  deadlineAt: number;
};

export function decideRetry(input: RetryInput): RetryDecision {
  const { policy, attemptsMade, now } = input;
  if (policy.max_attempts !== undefined && attemptsMade >= policy.max_attempts) {
    return { retry: false, reason: `upstream.retry.max_attempts (${policy.max_attempts}) reached` };
  }
  const budgetLeft = input.firstFailureAt + policy.max_wait_ms - now;
  const deadlineLeft = input.deadlineAt - now;
  if (deadlineLeft <= 0)
    return { retry: false, reason: "the exchange deadline (upstream.deadline_ms) passed" };
  if (budgetLeft <= 0) {
    return {
      retry: false,
      reason: `the retry budget upstream.retry.max_wait_ms (${policy.max_wait_ms} ms) is spent`,
    };
  }
  const asked = input.retryAfterMs;
  if (asked !== undefined && (asked > budgetLeft || asked >= deadlineLeft)) {
    return {
      retry: false,
      reason: `the upstream asked to wait ${asked} ms (Retry-After), beyond what is left of the retry budget (upstream.retry.max_wait_ms) or the exchange deadline (upstream.deadline_ms)`,
    };
  }
  // A jittered wait longer than what is left is shortened: one last attempt at the end of the budget.
  const jittered = Math.min(
    jitteredBackoff(policy, attemptsMade, input.random),
    budgetLeft,
    deadlineLeft - 1,
  );
  return { retry: true, waitMs: Math.max(asked ?? 0, jittered) };
}
