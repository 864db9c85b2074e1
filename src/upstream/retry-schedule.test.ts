import { describe, expect, test } from "bun:test";
import { retrySchema } from "../config/schema.ts";
import { decideRetry, jitteredBackoff, parseRetryAfter } from "./retry-schedule.ts";

const policy = retrySchema.parse({ initial_backoff_ms: 1000, max_backoff_ms: 30_000, max_wait_ms: 120_000 });

describe("parseRetryAfter", () => {
  const now = Date.parse("2026-12-04T12:00:00Z");
  test("delta-seconds", () => {
    expect(parseRetryAfter("7", now)).toBe(7000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
  });
  test("an HTTP date, in the future or the past", () => {
    expect(parseRetryAfter("Fri, 04 Dec 2026 12:00:20 GMT", now)).toBe(20_000);
    expect(parseRetryAfter("Fri, 04 Dec 2026 11:59:00 GMT", now)).toBe(0);
  });
  test("absent or unreadable", () => {
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter("-3", now)).toBeUndefined();
    expect(parseRetryAfter("1.5", now)).toBeUndefined();
  });
});

describe("jitteredBackoff", () => {
  test("full jitter between the floor and an exponentially growing ceiling, capped", () => {
    const at = (retry: number, r: number) => jitteredBackoff(policy, retry, () => r);
    expect([1, 2, 3, 4, 5, 6].map((n) => at(n, 0))).toEqual([1000, 1000, 1000, 1000, 1000, 1000]);
    expect([1, 2, 3, 4, 5, 6].map((n) => at(n, 1))).toEqual([2000, 4000, 8000, 16_000, 30_000, 30_000]);
    expect(at(3, 0.5)).toBe(4500);
  });
  test("every draw stays within its bounds", () => {
    for (let retry = 1; retry <= 10; retry++) {
      for (let i = 0; i < 200; i++) {
        const wait = jitteredBackoff(policy, retry, Math.random);
        expect(wait).toBeGreaterThanOrEqual(1000);
        expect(wait).toBeLessThanOrEqual(Math.min(30_000, 1000 * 2 ** retry));
      }
    }
  });
});

describe("decideRetry", () => {
  const base = { policy, random: () => 0.5, firstFailureAt: 0, deadlineAt: 600_000 };
  test("retries within the time budget, whatever the count when no cap is set", () => {
    expect(decideRetry({ ...base, attemptsMade: 1, now: 0 })).toEqual({ retry: true, waitMs: 1500 });
    expect(decideRetry({ ...base, attemptsMade: 40, now: 60_000 })).toEqual({ retry: true, waitMs: 15_500 });
  });
  test("the last wait is shortened to end with the budget; after it, no retry", () => {
    expect(decideRetry({ ...base, attemptsMade: 8, now: 110_000 })).toEqual({ retry: true, waitMs: 10_000 });
    const spent = decideRetry({ ...base, attemptsMade: 9, now: 120_000 });
    expect(spent).toEqual({ retry: false, reason: expect.stringContaining("upstream.retry.max_wait_ms") });
  });
  test("the exchange deadline bounds the budget", () => {
    const near = decideRetry({ ...base, attemptsMade: 5, now: 10_000, deadlineAt: 12_000 });
    expect(near).toEqual({ retry: true, waitMs: 1999 });
    const passed = decideRetry({ ...base, attemptsMade: 5, now: 12_000, deadlineAt: 12_000 });
    expect(passed).toEqual({ retry: false, reason: expect.stringContaining("upstream.deadline_ms") });
  });
  test("Retry-After is honoured: waited at least, and refused when it reaches past the budget", () => {
    expect(decideRetry({ ...base, attemptsMade: 1, now: 0, retryAfterMs: 20_000 })).toEqual({
      retry: true,
      waitMs: 20_000,
    });
    expect(decideRetry({ ...base, attemptsMade: 1, now: 0, retryAfterMs: 0 })).toEqual({
      retry: true,
      waitMs: 1500,
    });
    const beyond = decideRetry({ ...base, attemptsMade: 1, now: 100_000, retryAfterMs: 30_000 });
    expect(beyond).toEqual({ retry: false, reason: expect.stringContaining("Retry-After") });
  });
  test("max_attempts, when configured, caps the count", () => {
    const capped = retrySchema.parse({ max_attempts: 2 });
    expect(decideRetry({ ...base, policy: capped, attemptsMade: 1, now: 0 }).retry).toBe(true);
    expect(decideRetry({ ...base, policy: capped, attemptsMade: 2, now: 0 })).toEqual({
      retry: false,
      reason: "upstream.retry.max_attempts (2) reached",
    });
  });
  test("a throttle of 45 s is ridden out with at most one attempt per floor interval", () => {
    for (const random of [() => 0, () => 0.5, () => 0.999, Math.random]) {
      let now = 0;
      let attempts = 1;
      while (now < 45_000) {
        const decision = decideRetry({ ...base, random, attemptsMade: attempts, now });
        if (!decision.retry) throw new Error(`gave up at ${now} ms: ${decision.reason}`);
        now += decision.waitMs;
        attempts += 1;
      }
      expect(attempts).toBeLessThanOrEqual(1 + 45_000 / policy.initial_backoff_ms + 1);
      expect(now).toBeLessThan(45_000 + 30_000);
    }
  });
});
