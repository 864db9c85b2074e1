import { describe, expect, test } from "bun:test";
import { createToolCallProgress, describeToolCallState, type ProgressParams } from "./tool-call-progress.ts";

/** A reporter over a fake clock and fake interval timers: tick() fires every running interval once. */
function fakeProgress(token: unknown, intervalMs = 1_000) {
  const sent: ProgressParams[] = [];
  let now = 10_000;
  const timers = new Set<() => void>();
  const progress = createToolCallProgress({
    token,
    intervalMs,
    send: (params) => sent.push(params),
    clock: () => now,
    every: (_ms, tick) => {
      timers.add(tick);
      return () => timers.delete(tick);
    },
  });
  return {
    progress,
    sent,
    timers,
    tick: (ms: number) => {
      now += ms;
      for (const tick of [...timers]) tick();
    },
  };
}

describe("createToolCallProgress", () => {
  test("one notification per state change and per interval, progress increasing, the token echoed", () => {
    const f = fakeProgress("tok-1");
    f.progress.enter("admitting");
    f.tick(1_000);
    f.progress.enter("submitting");
    f.progress.enter("acknowledged", "job-7");
    f.tick(1_000);
    f.tick(1_000);
    expect(f.sent.map((p) => p.progress)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(new Set(f.sent.map((p) => p.progressToken))).toEqual(new Set(["tok-1"]));
    expect(f.sent.map((p) => p.message)).toEqual([
      "admitting: waiting for this call's delivery and for the earlier calls of its batch (0 s)",
      "admitting: waiting for this call's delivery and for the earlier calls of its batch (1 s)",
      "submitting to the robot controller (1 s)",
      "acknowledged by the robot controller as job job-7, waiting for its receipt (1 s)",
      "acknowledged by the robot controller as job job-7, waiting for its receipt (2 s)",
      "acknowledged by the robot controller as job job-7, waiting for its receipt (3 s)",
    ]);
    expect(f.sent.every((p) => !("total" in p))).toBe(true);
  });

  test("only one interval runs at a time, whatever the number of state changes", () => {
    const f = fakeProgress(3);
    f.progress.enter("admitting");
    f.progress.enter("submitting");
    f.progress.enter("acknowledged", "j");
    expect(f.timers.size).toBe(1);
  });

  test("nothing after stop, not from a state change nor from a tick already due", () => {
    const f = fakeProgress(0);
    f.progress.enter("admitting");
    const tick = [...f.timers][0];
    f.progress.stop();
    f.progress.enter("acknowledged", "j");
    tick?.();
    f.progress.stop();
    expect(f.sent).toHaveLength(1);
    expect(f.sent[0]?.progressToken).toBe(0);
    expect(f.timers.size).toBe(0);
  });

  test("interval 0: state changes only", () => {
    const f = fakeProgress("t", 0);
    f.progress.enter("admitting");
    f.progress.enter("submitting");
    f.tick(10_000);
    expect(f.sent.map((p) => p.progress)).toEqual([1, 2]);
    expect(f.timers.size).toBe(0);
  });

  test("no token, an empty one or one that is neither string nor number: no notification at all", () => {
    for (const token of [undefined, null, "", { id: 1 }, Number.NaN, true]) {
      const f = fakeProgress(token);
      f.progress.enter("admitting");
      f.tick(1_000);
      f.progress.enter("acknowledged", "j");
      f.progress.stop();
      expect(f.sent).toEqual([]);
      expect(f.timers.size).toBe(0);
    }
  });
});

describe("describeToolCallState", () => {
  test("names the state and whole seconds since the call arrived", () => {
    expect(describeToolCallState("submitting", 2_999)).toBe("submitting to the robot controller (2 s)");
    expect(describeToolCallState("acknowledged", 61_000)).toBe(
      "acknowledged by the robot controller, waiting for its receipt (61 s)",
    );
  });
});
