/**
 * The shared upstream budget on a fake clock: concurrency, smooth request and
 * token pacing, turns across episodes, aborted waits, and the AIMD pace.
 */
import { describe, expect, test } from "bun:test";
import { createFakeTimers, settle } from "../../test/support/fake-timers.ts";
import { createUpstreamBudget, type UpstreamBudgetSettings } from "./upstream-budget.ts";
import type { UpstreamPermit } from "./upstream-gate.ts";

function harness(settings: UpstreamBudgetSettings) {
  const timers = createFakeTimers(1_000_000);
  const budget = createUpstreamBudget(settings, { timers });
  const admitted: { label: string; at: number; permit: UpstreamPermit }[] = [];
  const rejected: { label: string; reason: unknown }[] = [];
  const ask = (
    label: string,
    episodeId: string,
    estimatedTokens = 0,
    signal = new AbortController().signal,
  ) =>
    budget.admit({ episodeId, estimatedTokens, signal }).then(
      (permit) => {
        admitted.push({ label, at: timers.now(), permit });
      },
      (reason) => {
        rejected.push({ label, reason });
      },
    );
  const permit = (label: string) => {
    const found = admitted.find((a) => a.label === label);
    if (!found) throw new Error(`${label} was not admitted`);
    return found.permit;
  };
  return { timers, budget, admitted, rejected, ask, permit, labels: () => admitted.map((a) => a.label) };
}

describe("upstream budget", () => {
  test("no more than max_concurrent in flight; a release lets the next one go", async () => {
    const h = harness({ max_concurrent: 2 });
    for (const n of [1, 2, 3, 4]) h.ask(`r${n}`, `e${n}`);
    await settle();
    expect(h.labels()).toEqual(["r1", "r2"]);
    expect(h.budget.state()).toMatchObject({ waiting: 2, inFlight: 2 });
    h.permit("r1").release("answered");
    await settle();
    expect(h.labels()).toEqual(["r1", "r2", "r3"]);
    h.permit("r1").release("answered"); // a second release of the same permit changes nothing
    await settle();
    expect(h.labels()).toEqual(["r1", "r2", "r3"]);
  });

  test("episodes are served in turn, each episode's oldest request first", async () => {
    const h = harness({ max_concurrent: 1 });
    h.ask("a0", "A");
    await settle();
    for (const [label, episode] of [
      ["a1", "A"],
      ["a2", "A"],
      ["a3", "A"],
      ["b1", "B"],
      ["c1", "C"],
      ["b2", "B"],
    ] as const)
      h.ask(label, episode);
    await settle();
    for (let i = 0; i < 6; i++) {
      h.admitted.at(-1)?.permit.release("answered");
      await settle();
    }
    expect(h.labels()).toEqual(["a0", "a1", "b1", "c1", "a2", "b2", "a3"]);
  });

  test("requests_per_minute paces requests evenly, never a minute's worth at once", async () => {
    const h = harness({ max_concurrent: 100, requests_per_minute: 60 });
    for (let n = 0; n < 5; n++) h.ask(`r${n}`, `e${n}`);
    await settle();
    while (await h.timers.next()) {}
    const start = h.admitted[0]?.at ?? 0;
    expect(h.admitted.map((a) => a.at - start)).toEqual([0, 1000, 2000, 3000, 4000]);
  });

  test("tokens_per_minute paces by the estimated tokens; a request over the whole minute's limit still goes, alone", async () => {
    const h = harness({ max_concurrent: 100, tokens_per_minute: 600 }); // 10 tokens a second, burst 10
    h.ask("small1", "A", 10);
    h.ask("huge", "B", 1500);
    h.ask("small2", "C", 5);
    await settle();
    expect(h.labels()).toEqual(["small1"]);
    while (await h.timers.next()) {}
    const at = Object.fromEntries(h.admitted.map((a) => [a.label, a.at - 1_000_000]));
    // huge waits for a full bucket (1 s), then its debt of 1490 tokens is paid at 10/s before small2 (5) fits.
    expect(at).toEqual({ small1: 0, huge: 1000, small2: 1000 + 149_000 + 500 });
  });

  test("an aborted wait leaves the queue at once with the signal's reason; the others keep their turn", async () => {
    const h = harness({ max_concurrent: 1 });
    h.ask("r1", "A");
    const cancel = new AbortController();
    h.ask("r2", "B", 0, cancel.signal);
    h.ask("r3", "C");
    await settle();
    expect(h.budget.state().waiting).toBe(2);
    const reason = new Error("episode cancelled");
    cancel.abort(reason);
    await settle();
    expect(h.rejected).toEqual([{ label: "r2", reason }]);
    expect(h.budget.state().waiting).toBe(1);
    h.permit("r1").release("answered");
    await settle();
    expect(h.labels()).toEqual(["r1", "r3"]);
  });

  test("a request whose signal is already aborted is refused without queueing", async () => {
    const h = harness({ max_concurrent: 1 });
    const cancel = new AbortController();
    cancel.abort(new Error("gone"));
    h.ask("r1", "A", 0, cancel.signal);
    await settle();
    expect(h.rejected.map((r) => r.label)).toEqual(["r1"]);
    expect(h.budget.state()).toMatchObject({ waiting: 0, inFlight: 0 });
  });

  test("the time waited in the queue is on the permit", async () => {
    const h = harness({ max_concurrent: 1 });
    h.ask("r1", "A");
    h.ask("r2", "B");
    await settle();
    await h.timers.advance(2500);
    h.permit("r1").release("answered");
    await settle();
    expect(h.permit("r1").waitedMs).toBe(0);
    expect(h.permit("r2").waitedMs).toBe(2500);
  });

  test("a throttle cuts the shared pace once for the requests sent together, answers bring it back one slot per round, the floor holds", async () => {
    const h = harness({ max_concurrent: 8, requests_per_minute: 600 });
    const answerOne = async (label: string, outcome: "answered" | "throttled" | "failed") => {
      h.ask(label, "A");
      while (await h.timers.next()) {}
      h.permit(label).release(outcome);
    };
    for (let n = 0; n < 4; n++) h.ask(`r${n}`, `e${n}`);
    while (await h.timers.next()) {}
    expect(h.labels()).toHaveLength(4);
    // All four were sent at full pace and come back 429: one congestion signal, one cut (to 0.7).
    for (let n = 0; n < 4; n++) h.permit(`r${n}`).release("throttled");
    expect(h.budget.state()).toMatchObject({ pace: 0.7, maxConcurrent: 5, requestsPerMinute: 420 });
    // Additive increase: with 5.6 of 8 in flight, each answer adds 1/(8·5.6), one slot per round of
    // answers: three answers take the window from 5.6 past 6.
    await answerOne("a", "answered");
    expect(h.budget.state().pace).toBeCloseTo(0.7 + 1 / (8 * 5.6));
    for (let n = 0; n < 2; n++) await answerOne(`round${n}`, "answered");
    expect(h.budget.state().maxConcurrent).toBe(6);
    // Each throttle of a request sent at the lowered pace cuts it again, down to the floor.
    for (let n = 0; n < 6; n++) await answerOne(`t${n}`, "throttled");
    expect(h.budget.state()).toMatchObject({ pace: 0.1, maxConcurrent: 1, requestsPerMinute: 60 });
    // A failure (5xx, reset) leaves the pace alone.
    await answerOne("f", "failed");
    expect(h.budget.state().pace).toBeCloseTo(0.1);
    // From the floor back to full pace: 1 + 1/2 + 1/3 … slots per answer, about 8²/2 answers.
    let answers = 0;
    while (h.budget.state().pace < 1) {
      await answerOne(`up${answers}`, "answered");
      answers += 1;
    }
    expect(answers).toBeGreaterThan(20);
    expect(answers).toBeLessThan(40);
    expect(h.budget.state()).toMatchObject({ pace: 1, maxConcurrent: 8, requestsPerMinute: 600 });
  });

  test("a throttle window is one cut per round trip; then the pace doubles per round back to where the provider held", async () => {
    const h = harness({ max_concurrent: 8 });
    const attempt = async (label: string, outcome: "answered" | "throttled", tookMs: number) => {
      h.ask(label, "A");
      await settle();
      await h.timers.advance(tookMs);
      h.permit(label).release(outcome);
    };
    // Answers take 1 s: the round trip the budget measures.
    for (let n = 0; n < 3; n++) await attempt(`a${n}`, "answered", 1000);
    await attempt("t1", "throttled", 1);
    expect(h.budget.state().pace).toBe(0.7);
    // Refusals come back at once: a retry refused within the round trip is the same throttle episode.
    await attempt("t2", "throttled", 1);
    await attempt("t3", "throttled", 500);
    expect(h.budget.state().pace).toBe(0.7);
    // A round trip after the cut the provider still refuses: cut again, and again, to the floor.
    await attempt("t4", "throttled", 600);
    expect(h.budget.state().pace).toBeCloseTo(0.49);
    for (const label of ["t5", "t6", "t7", "t8", "t9"]) await attempt(label, "throttled", 1000);
    expect(h.budget.state()).toMatchObject({ pace: 0.1, maxConcurrent: 1 });
    // The window is over: each answer adds a request in flight up to the 0.7 the provider held at ...
    await attempt("b1", "answered", 1000);
    expect(h.budget.state().pace).toBeCloseTo(0.225);
    for (const label of ["b2", "b3", "b4", "b5"]) await attempt(label, "answered", 1000);
    expect(h.budget.state()).toMatchObject({ pace: 0.7, maxConcurrent: 5 });
    // ... and from there one per round of answers.
    await attempt("c1", "answered", 1000);
    expect(h.budget.state().pace).toBeCloseTo(0.7 + 1 / (8 * 5.6));
  });

  test("a throttle on one episode slows the others: fewer in flight and a slower rate", async () => {
    const h = harness({ max_concurrent: 4, requests_per_minute: 120 });
    h.ask("a", "A");
    while (await h.timers.next()) {}
    h.permit("a").release("throttled");
    for (let n = 0; n < 4; n++) h.ask(`b${n}`, "B");
    for (let n = 0; n < 4; n++) h.ask(`c${n}`, "C");
    await settle();
    while (await h.timers.next()) {}
    // Pace 0.7: two in flight at most (⌊2.8⌋), 84 requests a minute instead of 120.
    expect(h.budget.state()).toMatchObject({ inFlight: 2, waiting: 6 });
    const times = h.admitted.slice(1).map((a) => a.at);
    const gap = (times[1] ?? 0) - (times[0] ?? 0);
    expect(gap).toBeGreaterThanOrEqual(714);
    expect(gap).toBeLessThanOrEqual(716);
  });
});
