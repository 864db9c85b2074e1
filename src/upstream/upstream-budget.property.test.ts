/**
 * Properties of the shared upstream budget under random load on a fake clock:
 * episodes send requests at random times with random token estimates, each
 * admitted request is held upstream for a random time and ends answered,
 * throttled or failed, and some waits are aborted. Whatever the load:
 * - never more than max_concurrent in flight;
 * - over any window of W ms, at most 1 + rpm·W/60000 requests and at most
 *   max(tpm/60, largest estimate) + tpm·W/60000 tokens (the buckets' bound, rate-bucket.ts);
 * - no starvation: every request not aborted is admitted, within the bound
 *   docs/upstream-budget.md derives: k·E·(H + 60000/(floor·rpm) + c·60000/(floor·tpm)),
 *   k = requests of its episode up to and including it, E = episodes, H = longest hold,
 *   c = largest token estimate, floor = the pace's floor.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createFakeTimers, settle } from "../../test/support/fake-timers.ts";
import { defaultPaceSettings } from "./aimd-pace.ts";
import { createUpstreamBudget } from "./upstream-budget.ts";

const requestArbitrary = fc.record({
  episode: fc.integer({ min: 0, max: 5 }),
  arrivesAt: fc.integer({ min: 0, max: 20_000 }),
  tokens: fc.integer({ min: 0, max: 5_000 }),
  holdMs: fc.integer({ min: 1, max: 3_000 }),
  outcome: fc.constantFrom("answered", "answered", "answered", "throttled", "failed"),
  abortAfterMs: fc.option(fc.integer({ min: 0, max: 10_000 }), { freq: 4 }),
});

const settingsArbitrary = fc.record({
  max_concurrent: fc.integer({ min: 1, max: 6 }),
  requests_per_minute: fc.option(fc.integer({ min: 30, max: 600 }), { nil: undefined }),
  tokens_per_minute: fc.option(fc.integer({ min: 3_000, max: 200_000 }), { nil: undefined }),
});

type Admission = { at: number; tokens: number; index: number };

function maxInWindow(admissions: Admission[], windowMs: number, weight: (a: Admission) => number): number {
  const sorted = [...admissions].sort((a, b) => a.at - b.at);
  let best = 0;
  let sum = 0;
  let from = 0;
  for (const a of sorted) {
    sum += weight(a);
    while ((sorted[from]?.at ?? 0) <= a.at - windowMs) sum -= weight(sorted[from++] as Admission);
    best = Math.max(best, sum);
  }
  return best;
}

describe("upstream budget under random load", () => {
  test("concurrency, rates and waits stay within their bounds", async () => {
    await fc.assert(
      fc.asyncProperty(
        settingsArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 40 }),
        async (settings, requests) => {
          const timers = createFakeTimers(0);
          const budget = createUpstreamBudget(settings, { timers });
          let inFlight = 0;
          let maxInFlight = 0;
          const admissions: Admission[] = [];
          const waits: { index: number; waited: number }[] = [];
          const aborted = new Set<number>();
          const settled = new Set<number>();

          requests.forEach((r, index) => {
            timers.setTimeout(() => {
              const controller = new AbortController();
              if (r.abortAfterMs !== null)
                timers.setTimeout(() => controller.abort(new Error("cancelled")), r.abortAfterMs);
              const enqueuedAt = timers.now();
              budget
                .admit({ episodeId: `e${r.episode}`, estimatedTokens: r.tokens, signal: controller.signal })
                .then(
                  (permit) => {
                    settled.add(index);
                    inFlight += 1;
                    maxInFlight = Math.max(maxInFlight, inFlight);
                    admissions.push({ at: timers.now(), tokens: r.tokens, index });
                    waits.push({ index, waited: timers.now() - enqueuedAt });
                    expect(permit.waitedMs).toBe(timers.now() - enqueuedAt);
                    timers.setTimeout(() => {
                      inFlight -= 1;
                      permit.release(r.outcome);
                    }, r.holdMs);
                  },
                  () => {
                    settled.add(index);
                    aborted.add(index);
                  },
                );
            }, r.arrivesAt);
          });
          await settle();
          for (let steps = 0; await timers.next(); steps++) expect(steps).toBeLessThan(100_000);

          // Everyone got an answer: admitted, or refused because its own signal aborted.
          expect(settled.size).toBe(requests.length);
          for (const index of aborted) expect(requests[index]?.abortAfterMs).not.toBeNull();
          expect(maxInFlight).toBeLessThanOrEqual(settings.max_concurrent);

          const largest = Math.max(...requests.map((r) => r.tokens));
          for (const windowMs of [1_000, 10_000, 60_000]) {
            if (settings.requests_per_minute !== undefined)
              expect(maxInWindow(admissions, windowMs, () => 1)).toBeLessThanOrEqual(
                1 + (settings.requests_per_minute * windowMs) / 60_000 + 1e-6,
              );
            if (settings.tokens_per_minute !== undefined)
              expect(maxInWindow(admissions, windowMs, (a) => a.tokens)).toBeLessThanOrEqual(
                Math.max(settings.tokens_per_minute / 60, largest) +
                  (settings.tokens_per_minute * windowMs) / 60_000 +
                  1e-6,
              );
          }

          const floor = defaultPaceSettings.floor;
          const holdMax = Math.max(...requests.map((r) => r.holdMs));
          const perAdmission =
            holdMax +
            (settings.requests_per_minute === undefined
              ? 0
              : 60_000 / (floor * settings.requests_per_minute)) +
            (settings.tokens_per_minute === undefined
              ? 0
              : (largest * 60_000) / (floor * settings.tokens_per_minute));
          const episodes = new Set(requests.map((r) => r.episode)).size;
          for (const { index, waited } of waits) {
            const r = requests[index];
            if (!r) continue;
            const k = requests.filter((o) => o.episode === r.episode && o.arrivesAt <= r.arrivesAt).length;
            expect(waited).toBeLessThanOrEqual(k * episodes * perAdmission);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
