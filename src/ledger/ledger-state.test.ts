import { describe, expect, test } from "bun:test";
import { admittedId, byArgs, byId, observe, record, runLedger } from "../../test/support/ledger-kit.ts";
import { SidecarError } from "../lib/errors.ts";
import { ledgerEventSchema } from "./events.ts";
import {
  checkBatchOrder,
  jobsInFlight,
  registerBatch,
  replayJournal,
  skipUnclaimedPredecessors,
  summarizeLedger,
  summaryClaimedLimit,
} from "./ledger-state.ts";
import { matchCallback } from "./match-callback.ts";

const run = runLedger;

describe("registerBatch", () => {
  test("registers pending calls and journals them", () => {
    const l = run();
    const { events } = l.register({ batchId: "b1", calls: [observe("c1"), record("c2")] });
    expect(events).toEqual([{ type: "registered", batchId: "b1", calls: [observe("c1"), record("c2")] }]);
    expect(l.state.calls.get("c2")).toMatchObject({
      status: "pending",
      index: 1,
      canonicalArgs: '{"nonce":"n1"}',
    });
  });

  test("a duplicate id within the batch or the episode registers nothing", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [observe("c1")] });
    const before = l.state;
    for (const calls of [
      [record("c2"), record("c2")],
      [record("c3"), observe("c1")],
    ]) {
      let thrown: unknown;
      try {
        registerBatch(before, { batchId: "b2", calls });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(SidecarError);
      expect((thrown as SidecarError).kind).toBe("upstream_invalid");
    }
    expect(l.state).toBe(before);
    expect(summarizeLedger(l.state).calls).toBe(1);
  });

  test("nothing is registered once admission is closed", () => {
    const l = run();
    l.close("cancelled");
    expect(() => l.register({ batchId: "b1", calls: [observe("c1")] })).toThrow(
      "episode admission is closed (cancelled)",
    );
  });
});

describe("delivery", () => {
  test("a callback for a pending call waits; after delivery it is admitted", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1")] });
    expect(l.match(byArgs("record", { nonce: "n1" }))).toEqual({ kind: "wait", batchId: "b1" });
    expect(l.match(byId("record", { nonce: "n1" }, "c1"))).toEqual({ kind: "wait", batchId: "b1" });
    l.deliver("b1");
    expect(admittedId(l.match(byArgs("record", { nonce: "n1" })))).toBe("c1");
  });

  test("a revoked call is refused, with and without identity", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1")] });
    l.revoke("b1");
    expect(l.match(byId("record", { nonce: "n1" }, "c1"))).toEqual({
      kind: "refused",
      code: "revoked",
      reason: 'call "c1" was revoked (delivery failed)',
    });
    expect(l.match(byArgs("record", { nonce: "n1" }))).toMatchObject({ kind: "refused", code: "no_match" });
  });

  test("delivered and revoked are final and idempotent", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1")] });
    l.register({ batchId: "b2", calls: [record("c2")] });
    l.deliver("b1");
    expect(l.deliver("b1").events).toEqual([]);
    expect(() => l.revoke("b1")).toThrow("already delivered");
    l.revoke("b2");
    expect(l.revoke("b2").events).toEqual([]);
    expect(() => l.deliver("b2")).toThrow("was revoked");
    expect(() => l.deliver("nope")).toThrow("unknown ledger batch");
  });

  test("a newer batch still being delivered is waited for before an older batch's call is taken", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1")] });
    l.deliver("b1");
    l.register({ batchId: "b2", calls: [record("c2")] });
    expect(l.match(byArgs("record", { nonce: "n1" }))).toEqual({ kind: "wait", batchId: "b2" });
    l.revoke("b2");
    expect(admittedId(l.match(byArgs("record", { nonce: "n1" })))).toBe("c1");
  });
});

describe("batch order and execution", () => {
  function batchOfThree() {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1"), record("c2"), record("c3")] });
    l.deliver("b1");
    return l;
  }

  test("a later call is blocked until every earlier call is acknowledged", () => {
    const l = batchOfThree();
    l.match(byId("record", { nonce: "n1" }, "c2"));
    expect(checkBatchOrder(l.state, "c2")).toEqual({ kind: "blocked", unclaimed: ["c1"], running: [] });
    expect(() => l.execute("c2", { type: "submitted" })).toThrow("before the earlier calls of its batch");
    l.match(byId("record", { nonce: "n1" }, "c1"));
    expect(checkBatchOrder(l.state, "c1")).toEqual({ kind: "ready" });
    l.execute("c1", { type: "submitted" });
    expect(checkBatchOrder(l.state, "c2")).toEqual({ kind: "blocked", unclaimed: [], running: ["c1"] });
    l.execute("c1", { type: "acknowledged", jobId: "j1" });
    expect(checkBatchOrder(l.state, "c2")).toEqual({ kind: "ready" });
    l.execute("c2", { type: "submitted" });
    l.execute("c2", { type: "failed", reason: "robot said no" });
    l.execute("c1", { type: "receipt", result: { ok: true } });
    expect(summarizeLedger(l.state)).toMatchObject({
      counts: { completed: 1, failed: 1, delivered: 1 },
      claimed: ["c2", "c1"],
      unfinished: [],
    });
  });

  test("skipping unclaimed predecessors lets a call go and makes them unclaimable", () => {
    const l = batchOfThree();
    l.match(byId("record", { nonce: "n1" }, "c3"));
    const skipped = skipUnclaimedPredecessors(l.state, "c3", "call c3 went ahead");
    expect(skipped.events.map((e) => e.type)).toEqual(["skipped", "skipped"]);
    const state = skipped.state;
    expect(checkBatchOrder(state, "c3")).toEqual({ kind: "ready" });
    expect(matchCallback(state, byId("record", { nonce: "n1" }, "c1")).outcome).toMatchObject({
      kind: "refused",
      code: "skipped",
    });
    expect(matchCallback(state, byArgs("record", { nonce: "n1" })).outcome).toMatchObject({
      reason:
        "no delivered call matches tool record with these arguments (1 matching call(s) already claimed, 2 revoked or skipped)",
    });
  });

  test("steps out of order are bugs", () => {
    const l = batchOfThree();
    expect(() => l.execute("c1", { type: "submitted" })).toThrow("in state delivered");
    l.match(byArgs("record", { nonce: "n1" }));
    expect(() => l.execute("c1", { type: "acknowledged", jobId: "j" })).toThrow("in state claimed");
    l.execute("c1", { type: "submitted" });
    l.execute("c1", { type: "receipt", result: null });
    expect(() => l.execute("c1", { type: "failed", reason: "late" })).toThrow("in state completed");
  });
});

describe("replayJournal", () => {
  test("rebuilds the state, closes admission, reports claimed calls without outcome as uncertain", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [observe("o1"), record("c1"), record("c2")] });
    l.deliver("b1");
    l.match(byArgs("observe", {}));
    l.execute("o1", { type: "submitted" });
    l.execute("o1", { type: "acknowledged", jobId: "j1" });
    l.execute("o1", { type: "receipt", result: { nonce: "n1" } });
    l.match(byArgs("record", { nonce: "n1" }));
    l.execute("c1", { type: "submitted" });
    const replayed = replayJournal(l.journal);
    expect(summarizeLedger(replayed)).toEqual({
      ...summarizeLedger(l.state),
      admission: "closed",
      interrupted: true,
      uncertain: ["c1"],
    });
    for (const callback of [byArgs("record", { nonce: "n1" }), byId("record", { nonce: "n1" }, "c2")]) {
      expect(matchCallback(replayed, callback).outcome).toMatchObject({
        kind: "refused",
        code: "admission_closed",
      });
    }
    expect(() => registerBatch(replayed, { batchId: "b9", calls: [] })).toThrow("restarted");
  });

  test("a journal written when batches also carried exchangeId replays the same", () => {
    const old = [
      '{"type":"registered","at":1,"batchId":"ex_0001","exchangeId":"ex_0001","calls":[{"id":"c1","modelName":"mcp__ura__record","tool":"record","args":{"nonce":"n1"}}]}',
      '{"type":"delivered","at":2,"batchId":"ex_0001"}',
    ].map((line) => ledgerEventSchema.parse(JSON.parse(line)));
    const l = run();
    l.register({ batchId: "ex_0001", calls: [record("c1")] });
    l.deliver("ex_0001");
    expect(old[0]).not.toHaveProperty("exchangeId");
    expect(summarizeLedger(replayJournal(old))).toEqual(summarizeLedger(replayJournal(l.journal)));
  });

  test("every prefix of a journal replays", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1"), record("c2")] });
    l.deliver("b1");
    l.match(byArgs("record", { nonce: "n1" }));
    l.execute("c1", { type: "submitted" });
    l.execute("c1", { type: "acknowledged", jobId: "j" });
    l.close("done");
    for (let n = 0; n <= l.journal.length; n++) {
      const state = replayJournal(l.journal.slice(0, n));
      expect(state.admission).toBe("closed");
      expect(state.interrupted).toBe(true);
    }
  });

  test("a journal that does not fit is reported, not guessed", () => {
    expect(() => replayJournal([{ type: "delivered", batchId: "b1" }])).toThrow(
      "ledger journal event 0 (delivered) does not apply",
    );
  });
});

describe("a transition that is never committed", () => {
  // The episode ledger keeps the state from before an event whose journal write failed.
  test("leaves the state it came from whole, and the next transition from it is correct", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1"), record("c2")] });
    l.deliver("b1");
    const before = l.state;
    const discarded = matchCallback(before, byArgs("record", { nonce: "n1" }));
    expect(admittedId(discarded.outcome)).toBe("c1");
    registerBatch(discarded.state, { batchId: "b2", calls: [record("c3")] });

    expect(before.calls.get("c1")?.status).toBe("delivered");
    expect(before.calls.has("c3")).toBe(false);
    expect(before.batches.has("b2")).toBe(false);
    expect(before.claims).toBe(0);
    expect(summarizeLedger(before)).toMatchObject({ calls: 2, claimed: [], counts: { delivered: 2 } });
    const next = matchCallback(before, byArgs("record", { nonce: "n1" }));
    expect(admittedId(next.outcome)).toBe("c1");
    expect(next.state.calls.get("c1")).toMatchObject({ status: "claimed", claimOrder: 1 });
    expect(admittedId(matchCallback(next.state, byArgs("record", { nonce: "n1" })).outcome)).toBe("c2");
  });
});

describe("summarizeLedger of a long episode", () => {
  test("lists the most recent claims by id and counts them all; unfinished and jobs in flight stay whole", () => {
    const l = run();
    const claims = 250;
    for (let n = 1; n <= claims; n++) {
      l.register({ batchId: `b${n}`, calls: [observe(`c${n}`)] });
      l.deliver(`b${n}`);
      expect(admittedId(l.match(byId("observe", {}, `c${n}`)))).toBe(`c${n}`);
      // Every call ends with its receipt except c3 (left acknowledged) and c200 (left claimed).
      if (n === 200) continue;
      l.execute(`c${n}`, { type: "submitted" });
      l.execute(`c${n}`, { type: "acknowledged", jobId: `j${n}` });
      if (n !== 3) l.execute(`c${n}`, { type: "receipt", result: {} });
    }
    const summary = summarizeLedger(l.state);
    expect(summary.claimed).toEqual(
      Array.from({ length: summaryClaimedLimit }, (_, i) => `c${claims - summaryClaimedLimit + 1 + i}`),
    );
    expect(summary.claimedTotal).toBe(claims);
    expect(summary.unfinished).toEqual(["c3", "c200"]);
    expect(jobsInFlight(l.state)).toEqual([{ callId: "c3", jobId: "j3" }]);
    expect(summarizeLedger(replayJournal(l.journal)).uncertain).toEqual(["c3", "c200"]);
  });
});
