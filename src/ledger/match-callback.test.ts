import { describe, expect, test } from "bun:test";
import { admittedId, byArgs, byId, observe, record, runLedger } from "../../test/support/ledger-kit.ts";
import { checkBatchOrder, closeAdmission, summarizeLedger } from "./ledger-state.ts";

const run = runLedger;

describe("matching", () => {
  test("two identical calls in one batch are both admitted; a third identical callback is refused", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1"), record("c2")] });
    l.deliver("b1");
    expect(admittedId(l.match(byArgs("record", { nonce: "n1" })))).toBe("c1");
    expect(admittedId(l.match(byArgs("record", { nonce: "n1", wait_for_previous: true })))).toBe("c2");
    expect(l.match(byArgs("record", { nonce: "n1" }))).toEqual({
      kind: "refused",
      code: "already_claimed",
      reason:
        "no delivered call matches tool record with these arguments (2 matching call(s) already claimed, 0 revoked or skipped)",
    });
    expect(summarizeLedger(l.state)).toMatchObject({ claimed: ["c1", "c2"], refusedCallbacks: 1 });
  });

  test("name + arguments match the newest batch first (in delivery order within it), whatever the key order", () => {
    const l = run();
    l.register({
      batchId: "b1",
      calls: [{ id: "m1", modelName: "ura_move", tool: "move", args: { x: 1, y: 2 } }, record("c1")],
    });
    l.register({
      batchId: "b2",
      calls: [{ id: "m2", modelName: "ura_move", tool: "move", args: { y: 2, x: 1 } }],
    });
    l.deliver("b1");
    l.deliver("b2");
    expect(admittedId(l.match(byArgs("move", { y: 2, x: 1 })))).toBe("m2");
    expect(admittedId(l.match(byArgs("move", { x: 1, y: 2 })))).toBe("m1");
  });

  test("identity matches exactly that call, never another one by name + arguments", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1"), record("c2")] });
    l.deliver("b1");
    expect(admittedId(l.match(byId("record", { nonce: "n1", _callID: "c2" }, "c2")))).toBe("c2");
    expect(l.match(byId("record", { nonce: "n1" }, "c2"))).toMatchObject({
      kind: "refused",
      code: "already_claimed",
      reason: 'call "c2" was already claimed',
    });
    // c1 is still free, but an id was given: no fallback to name + arguments.
    expect(l.match(byId("record", { nonce: "n1" }, "forged"))).toMatchObject({
      kind: "refused",
      code: "no_match",
      reason: 'no delivered call matches call id "forged"',
    });
    expect(l.state.calls.get("c1")?.status).toBe("delivered");
  });

  test("identity with different arguments or tool is refused", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1"), observe("o1")] });
    l.deliver("b1");
    expect(l.match(byId("record", { nonce: "other" }, "c1"))).toEqual({
      kind: "refused",
      code: "arguments_differ",
      reason: `call "c1"'s arguments differ from the delivered ones`,
    });
    expect(l.match(byId("observe", {}, "c1"))).toMatchObject({ kind: "refused", code: "tool_differs" });
    expect(l.match(byId("record", { nonce: "n1" }, "o1"))).toMatchObject({
      kind: "refused",
      code: "tool_differs",
    });
    expect(summarizeLedger(l.state).counts.delivered).toBe(2);
  });

  test("a callback that matches nothing is refused and journaled", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1")] });
    l.deliver("b1");
    expect(l.match(byArgs("record", { nonce: "forged" }))).toMatchObject({
      kind: "refused",
      code: "no_match",
    });
    expect(l.journal.at(-1)).toMatchObject({
      type: "refused",
      tool: "record",
      arguments: '{"nonce":"forged"}',
    });
  });

  test("after admission closes every callback is refused", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1")] });
    l.deliver("b1");
    l.close("episode cancelled");
    expect(l.match(byArgs("record", { nonce: "n1" }))).toEqual({
      kind: "refused",
      code: "admission_closed",
      reason: "episode admission is closed (episode cancelled)",
    });
    expect(closeAdmission(l.state, "again").events).toEqual([]);
  });
});

describe("refuseCallback", () => {
  test("journals a refusal decided elsewhere, with the identity and canonical arguments, and claims nothing", () => {
    const l = run();
    l.register({ batchId: "b1", calls: [record("c1")] });
    l.deliver("b1");
    l.refuse(byId("record", { nonce: "n1" }, "c1"), "the delivery wait ran out");
    l.refuse(byArgs("record", { nonce: 1n }), "unserialisable");
    expect(l.journal.slice(-2)).toEqual([
      {
        type: "refused",
        tool: "record",
        arguments: '{"nonce":"n1"}',
        callId: "c1",
        code: "no_match",
        reason: "the delivery wait ran out",
      },
      {
        type: "refused",
        tool: "record",
        arguments: "<not JSON>",
        code: "no_match",
        reason: "unserialisable",
      },
    ]);
    expect(summarizeLedger(l.state)).toMatchObject({ claimed: [], refusedCallbacks: 2 });
    expect(l.state.calls.get("c1")?.status).toBe("delivered");
  });
});

test("an unrun call of an older batch never jumps the newest batch's order (id-less client)", () => {
  const l = run();
  l.register({ batchId: "b1", calls: [record("orphan")] });
  l.deliver("b1");
  l.register({
    batchId: "b2",
    calls: [observe("obs"), record("rec")],
  });
  l.deliver("b2");
  // record(n) arrives with observe: it is batch 2's record, which waits for observe.
  expect(admittedId(l.match(byArgs("record", { nonce: "n1" })))).toBe("rec");
  expect(checkBatchOrder(l.state, "rec").kind).toBe("blocked");
});
