import { describe, expect, test } from "bun:test";
import { record, rejection } from "../../test/support/ledger-kit.ts";
import {
  createEpisodeLedger,
  type EpisodeLedger,
  type EpisodeLedgerOptions,
  restoreEpisodeLedger,
} from "./episode-ledger.ts";
import { type LedgerEvent, ledgerEventSchema } from "./events.ts";
import { callsInDeliveryOrder, closeAdmission, foldJournal, summarizeLedger } from "./ledger-state.ts";
import type { LedgerCallback } from "./match-callback.ts";

/**
 * A ledger over an in-memory journal that keeps each event as a restart reads it
 * back. `disk.room`: how many more events the journal takes; past that, every
 * append throws "disk full" (0 = full now, Infinity = space again).
 */
function setup(overrides: Partial<EpisodeLedgerOptions> = {}) {
  const journal: LedgerEvent[] = [];
  const disk = { room: Number.POSITIVE_INFINITY };
  let now = 1_000;
  const ledger = createEpisodeLedger({
    journal: {
      append: (event) => {
        if (disk.room <= 0) throw new Error("disk full");
        disk.room--;
        journal.push(ledgerEventSchema.parse(JSON.parse(JSON.stringify(event))));
      },
    },
    clock: () => now++,
    deliveryWaitMs: 200,
    previousAckWaitMs: 200,
    ...overrides,
  });
  return { ledger, journal, disk };
}

const recordCallback = (nonce = "n1", callId?: string): LedgerCallback => ({
  tool: "record",
  args: { nonce },
  ...(callId === undefined ? {} : { identity: { kind: "call_id" as const, value: callId } }),
});
/** Batch b1 of the one record call c1, registered and delivered: its callback can be admitted. */
function deliverOneCall(ledger: EpisodeLedger): void {
  ledger.register({ batchId: "b1", calls: [record("c1")] });
  ledger.delivered("b1");
}
const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));

describe("createEpisodeLedger", () => {
  test("journals every transition with the injected clock, before admit resolves", async () => {
    const { ledger, journal } = setup();
    deliverOneCall(ledger);
    const admission = await ledger.admit(recordCallback());
    expect(journal.at(-1)).toEqual({ type: "claimed", at: 1_002, callId: "c1", by: "name_args" });
    admission.submitted();
    admission.acknowledged("job-1");
    admission.receipt({ ok: true });
    expect(journal.map((e) => e.type)).toEqual([
      "registered",
      "delivered",
      "claimed",
      "submitted",
      "acknowledged",
      "receipt",
    ]);
    expect(ledger.summary()).toMatchObject({ claimed: ["c1"], unfinished: [], counts: { completed: 1 } });
  });

  test("a callback waiting for delivery is admitted when the delivery completes", async () => {
    const { ledger } = setup();
    ledger.register({ batchId: "b1", calls: [record("c1")] });
    let settled = false;
    const pending = ledger.admit(recordCallback("n1", "c1")).finally(() => {
      settled = true;
    });
    await tick();
    expect(settled).toBe(false);
    ledger.delivered("b1");
    expect((await pending).call.id).toBe("c1");
  });

  test("a callback waiting for delivery is refused when the batch is revoked", async () => {
    const { ledger, journal } = setup();
    ledger.register({ batchId: "b1", calls: [record("c1")] });
    const pending = ledger.admit(recordCallback());
    await tick();
    ledger.revoke("b1", "client disconnected");
    const error = await rejection(pending);
    expect(error.message).toContain("no delivered call matches tool record");
    expect(journal.at(-1)).toMatchObject({ type: "refused", code: "no_match" });
  });

  test("the delivery wait is bounded", async () => {
    const { ledger, journal } = setup({ deliveryWaitMs: 20 });
    ledger.register({ batchId: "b1", calls: [record("c1")] });
    const started = performance.now();
    const error = await rejection(ledger.admit(recordCallback("n1", "c1")));
    expect(performance.now() - started).toBeGreaterThanOrEqual(15);
    expect(error.message).toBe("tool call refused: the delivery of batch b1 did not complete within 20 ms");
    expect(journal.at(-1)).toMatchObject({ type: "refused", code: "delivery_timeout", callId: "c1" });
    expect(ledger.state().calls.get("c1")?.status).toBe("pending");
  });

  test("two identical concurrent callbacks run both calls in batch order; a third is refused", async () => {
    const { ledger } = setup();
    ledger.register({ batchId: "b1", calls: [record("c1"), record("c2")] });
    const first = ledger.admit(recordCallback());
    const second = ledger.admit(recordCallback());
    ledger.delivered("b1");
    const a = await first;
    expect(a.call.id).toBe("c1");
    const third = await rejection(ledger.admit(recordCallback()));
    expect(third.message).toContain("2 matching call(s) already claimed");
    a.submitted();
    a.acknowledged("j1");
    expect((await second).call.id).toBe("c2");
  });

  test("call 2 is admitted only after call 1 is acknowledged, even if its callback comes first", async () => {
    // A wait bound far above the test's own pauses: under load, 200 ms ran out and refused call 2.
    const { ledger, journal } = setup({ previousAckWaitMs: 10_000 });
    ledger.register({ batchId: "b1", calls: [record("c1", "a"), record("c2", "b")] });
    ledger.delivered("b1");
    const order: string[] = [];
    const second = ledger.admit(recordCallback("b", "c2")).then((admission) => {
      order.push("c2 admitted");
      return admission;
    });
    await tick();
    const first = await ledger.admit(recordCallback("a", "c1"));
    order.push("c1 admitted");
    first.submitted();
    await tick();
    expect(order).toEqual(["c1 admitted"]);
    order.push("c1 acknowledged");
    first.acknowledged("j1");
    (await second).submitted();
    expect(order).toEqual(["c1 admitted", "c1 acknowledged", "c2 admitted"]);
    const submitted = journal.filter((e) => e.type === "submitted").map((e) => e.callId);
    expect(submitted).toEqual(["c1", "c2"]);
  });

  test("a call goes ahead after the bound when an earlier call was never claimed, which is then skipped", async () => {
    const { ledger, journal } = setup({ previousAckWaitMs: 20 });
    ledger.register({ batchId: "b1", calls: [record("c1", "a"), record("c2", "b")] });
    ledger.delivered("b1");
    const second = await ledger.admit(recordCallback("b", "c2"));
    expect(second.call.id).toBe("c2");
    expect(journal.find((e) => e.type === "skipped")).toMatchObject({ callId: "c1" });
    const late = await rejection(ledger.admit(recordCallback("a", "c1")));
    expect(late.message).toContain('call "c1" was skipped');
  });

  test("a call is refused after the bound when an earlier call is running unacknowledged", async () => {
    const { ledger } = setup({ previousAckWaitMs: 20 });
    ledger.register({ batchId: "b1", calls: [record("c1", "a"), record("c2", "b")] });
    ledger.delivered("b1");
    (await ledger.admit(recordCallback("a"))).submitted();
    const error = await rejection(ledger.admit(recordCallback("b")));
    expect(error.message).toBe(
      'call "c2" refused: the earlier call(s) c1 of its batch were not acknowledged by the executor within 20 ms',
    );
    expect(ledger.state().calls.get("c2")?.status).toBe("failed");
    expect(ledger.summary().unfinished).toEqual(["c1"]);
  });

  test("close refuses waiting and later callbacks and fails calls that have not started", async () => {
    const { ledger } = setup();
    ledger.register({ batchId: "b1", calls: [record("c1", "a"), record("c2", "b")] });
    ledger.register({ batchId: "b2", calls: [record("c3", "c")] });
    ledger.delivered("b1");
    const gated = ledger.admit(recordCallback("b"));
    const waiting = ledger.admit(recordCallback("c"));
    await tick();
    ledger.close("episode cancelled");
    expect((await rejection(gated)).message).toBe(
      "admission closed before the call started (episode cancelled)",
    );
    const refused = await rejection(waiting);
    expect(refused.kind).toBe("episode_closed");
    expect(refused.message).toBe("tool call refused: episode admission is closed (episode cancelled)");
    expect((await rejection(ledger.admit(recordCallback("a")))).kind).toBe("episode_closed");
    expect(() => ledger.register({ batchId: "b3", calls: [record("c4")] })).toThrow("closed");
  });

  test("drain waits for admitted calls and reports those that did not finish", async () => {
    const { ledger } = setup();
    ledger.register({
      batchId: "b1",
      calls: [record("c1"), { ...record("c2"), tool: "observe" }],
    });
    ledger.delivered("b1");
    const a = await ledger.admit(recordCallback());
    a.submitted();
    a.acknowledged("j1");
    const b = await ledger.admit({ tool: "observe", args: { nonce: "n1" } });
    b.submitted();
    const drained = ledger.drain({ timeoutMs: 1_000 });
    await tick();
    a.receipt("ok");
    b.failed("controller error");
    expect(await drained).toEqual({ unfinished: [] });

    const other = setup().ledger;
    other.register({ batchId: "b1", calls: [record("c1")] });
    other.delivered("b1");
    (await other.admit(recordCallback())).submitted();
    expect(await other.drain({ timeoutMs: 20 })).toEqual({ unfinished: ["c1"] });
  });

  test("a failing journal stops the call from reaching the executor and stops admission", async () => {
    const { ledger, disk } = setup();
    ledger.register({ batchId: "b1", calls: [record("c1"), record("c2")] });
    ledger.delivered("b1");
    disk.room = 0;
    const error = await rejection(ledger.admit(recordCallback()));
    expect(error.message).toBe("the ledger journal failed (disk full); no further tool calls are admitted");
    expect(ledger.state().calls.get("c1")?.status).toBe("delivered");
    disk.room = Number.POSITIVE_INFINITY;
    expect(await rejection(ledger.admit(recordCallback()))).toBe(error);
    expect(ledger.summary().admission).toBe("closed");
  });
});

describe("restoreEpisodeLedger", () => {
  test("after a restart nothing from before can run, and unfinished calls are uncertain", async () => {
    const { ledger, journal } = setup();
    ledger.register({ batchId: "b1", calls: [record("c1"), record("c2"), record("c3")] });
    ledger.delivered("b1");
    const a = await ledger.admit(recordCallback());
    a.submitted();
    a.acknowledged("j1");
    const before = ledger.summary();

    const lines = journal.map((e) => JSON.stringify(e));
    const events = lines.map((line) => ledgerEventSchema.parse(JSON.parse(line)));
    const after: LedgerEvent[] = [];
    const restored = restoreEpisodeLedger(events, {
      journal: { append: (e) => after.push(e) },
      clock: () => 5,
      deliveryWaitMs: 20,
      previousAckWaitMs: 20,
    });
    expect(after).toEqual([{ type: "interrupted", at: 5, uncertain: ["c1"] }]);
    expect(restored.summary()).toEqual({
      ...before,
      admission: "closed",
      interrupted: true,
      uncertain: ["c1"],
    });
    for (const callback of [recordCallback(), recordCallback("n1", "c2"), recordCallback("n1", "c1")]) {
      expect((await rejection(restored.admit(callback))).message).toContain("the sidecar restarted");
    }
  });
});

describe("durable claims", () => {
  test("admit resolves only after the journal sync made the claim durable", async () => {
    const journal: LedgerEvent[] = [];
    let synced: () => void = () => {};
    const syncedAt: number[] = [];
    const ledger = createEpisodeLedger({
      journal: {
        append: (event) => journal.push(event),
        sync: () =>
          new Promise<void>((resolve) => {
            synced = () => {
              syncedAt.push(journal.length);
              resolve();
            };
          }),
      },
      deliveryWaitMs: 200,
      previousAckWaitMs: 200,
    });
    deliverOneCall(ledger);
    let admitted = false;
    const admission = ledger.admit(recordCallback("n1", "c1")).then((a) => {
      admitted = true;
      return a;
    });
    await tick();
    expect(journal.map((e) => e.type)).toEqual(["registered", "delivered", "claimed"]);
    expect(admitted).toBe(false);
    synced();
    expect((await admission).call.id).toBe("c1");
    expect(syncedAt).toEqual([3]);
  });

  test("a failed sync fails the call unrun; the refusal says why", async () => {
    const journal: LedgerEvent[] = [];
    const ledger = createEpisodeLedger({
      journal: {
        append: (event) => journal.push(event),
        sync: () => Promise.reject(new Error("EIO: i/o error, fdatasync")),
      },
      deliveryWaitMs: 200,
      previousAckWaitMs: 200,
    });
    deliverOneCall(ledger);
    const error = await rejection(ledger.admit(recordCallback("n1", "c1")));
    expect(error.message).toMatch(/could not be made durable \(EIO.*never reached the executor/);
    expect(journal.at(-1)).toMatchObject({ type: "failed", callId: "c1" });
  });
});

describe("a failing journal write", () => {
  test("leaves the state as it was: a batch whose registration failed is not in it", async () => {
    const { ledger, disk } = setup();
    deliverOneCall(ledger);
    const admission = await ledger.admit(recordCallback());
    disk.room = 0;
    expect(() => ledger.register({ batchId: "b2", calls: [record("c2")] })).toThrow("disk full");
    const state = ledger.state();
    expect(state.batches.has("b2")).toBe(false);
    expect(state.calls.has("c2")).toBe(false);
    expect(state.calls.get("c1")?.status).toBe("claimed");
    expect(ledger.summary()).toMatchObject({
      admission: "closed",
      calls: 1,
      claimed: ["c1"],
      unfinished: ["c1"],
    });
    // The call admitted before the failure cannot record its progress either: it stays unfinished.
    expect(() => admission.submitted()).toThrow("no further tool calls are admitted");
    expect(ledger.state().calls.get("c1")?.status).toBe("claimed");
    disk.room = Number.POSITIVE_INFINITY;
    expect((await rejection(ledger.admit(recordCallback("n1", "c2")))).message).toContain(
      "the ledger journal failed",
    );
  });
});

describe("a journal that fails partway through a transition", () => {
  // c5's wait for the earlier calls of its batch runs out while c2, claimed, waits for c1:
  // skipping c1, c3 and c4 is one transition of three events, of which the disk takes `room`.
  for (const room of [0, 1, 2]) {
    test(`the live state is what the journal holds (${room} of 3 events taken); nothing more is admitted`, async () => {
      const { ledger, journal, disk } = setup({ previousAckWaitMs: 30 });
      const calls = ["c1", "c2", "c3", "c4", "c5"].map((id) => record(id, id));
      ledger.register({ batchId: "b1", calls });
      ledger.delivered("b1");
      const last = ledger.admit(recordCallback("c5", "c5"));
      await tick(10); // c2's wait ends after c5's
      const second = ledger.admit(recordCallback("c2", "c2"));
      disk.room = room;

      const error = await rejection(last);
      expect(error.message).toBe("the ledger journal failed (disk full); no further tool calls are admitted");
      // c1 skipped in the journal releases c2's batch order, but the broken ledger admits nothing.
      expect(await rejection(second)).toBe(error);
      expect(journal.filter((e) => e.type === "skipped")).toHaveLength(room);

      const journaled = closeAdmission(foldJournal(journal), "the ledger journal failed").state;
      expect(ledger.summary()).toEqual(summarizeLedger(journaled));
      expect(callsInDeliveryOrder(ledger.state())).toEqual(callsInDeliveryOrder(journaled));
      expect(ledger.summary()).toMatchObject({ admission: "closed", unfinished: ["c5", "c2"] });
      // A restart rebuilds the state this process showed.
      const restored = restoreEpisodeLedger(journal, {
        journal: { append: () => {} },
        deliveryWaitMs: 20,
        previousAckWaitMs: 20,
      });
      expect(restored.summary()).toEqual({
        ...ledger.summary(),
        interrupted: true,
        uncertain: ["c5", "c2"],
      });
    });
  }
});
