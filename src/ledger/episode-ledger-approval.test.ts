/**
 * The ledger's hold on a call by its tool's policy: approval (a decision bound to
 * the call id and its arguments' SHA-256, journaled with who decided; rejection,
 * expiry, close and restart all leave the call unrun) and rate limits.
 */
import { describe, expect, test } from "bun:test";
import { rejection } from "../../test/support/ledger-kit.ts";
import { SidecarError } from "../lib/errors.ts";
import { argumentsSha256, canonicalArguments } from "./canonical-arguments.ts";
import { createEpisodeLedger, type EpisodeLedgerOptions, restoreEpisodeLedger } from "./episode-ledger.ts";
import { type LedgerEvent, ledgerEventSchema } from "./events.ts";
import { foldJournal } from "./ledger-state.ts";
import type { ToolPolicy } from "./tool-policy.ts";

const moveNeedsApproval: ToolPolicy = {
  approvalRule: (tool) => (tool === "move" ? "always" : undefined),
  rate: (tool) => (tool === "grip" ? { per_minute: 2, min_interval_ms: 100 } : undefined),
};

function setup(overrides: Partial<EpisodeLedgerOptions> = {}) {
  const journal: LedgerEvent[] = [];
  const clock = { now: 1_000 };
  const ledger = createEpisodeLedger({
    journal: { append: (event) => journal.push(ledgerEventSchema.parse(JSON.parse(JSON.stringify(event)))) },
    clock: () => clock.now,
    deliveryWaitMs: 200,
    previousAckWaitMs: 200,
    policy: moveNeedsApproval,
    approvalTimeoutMs: 5_000,
    ...overrides,
  });
  return { ledger, journal, clock };
}

const call = (id: string, tool: string, args: Record<string, unknown> = { x: 1 }) => ({
  id,
  modelName: `mcp__ura__${tool}`,
  tool,
  args,
});
const moveSha = argumentsSha256(canonicalArguments({ x: 1 }));
const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));

function deliver(
  ledger: ReturnType<typeof setup>["ledger"],
  batchId: string,
  calls: ReturnType<typeof call>[],
) {
  ledger.register({ batchId, calls });
  ledger.delivered(batchId);
}

describe("approval", () => {
  test("a call whose tool asks waits in awaiting_approval; an approval lets it run, journaled with who and when", async () => {
    const { ledger, journal, clock } = setup();
    deliver(ledger, "b1", [call("m1", "move")]);
    let asked = 0;
    let admitted = false;
    const admission = ledger
      .admit({ tool: "move", args: { x: 1 } }, { onApprovalRequested: () => asked++ })
      .then((a) => {
        admitted = true;
        return a;
      });
    await tick();
    expect(asked).toBe(1);
    expect(admitted).toBe(false);
    expect(ledger.state().calls.get("m1")?.status).toBe("awaiting_approval");
    expect(ledger.pendingApprovals()).toEqual([
      { call: expect.objectContaining({ id: "m1" }), requestedAt: 1_000, expiresAt: 6_000 },
    ]);
    clock.now = 1_500;
    ledger.decide("m1", { decision: "approve", by: "ui", argsSha256: moveSha });
    const { call: approved } = await admission;
    expect(approved.status).toBe("approved");
    expect(ledger.pendingApprovals()).toEqual([]);
    expect(journal.map((e) => e.type)).toEqual([
      "registered",
      "delivered",
      "claimed",
      "approval_requested",
      "approved",
    ]);
    expect(journal.at(-2)).toMatchObject({
      callId: "m1",
      argsSha256: moveSha,
      rule: "always",
      expiresAt: 6_000,
    });
    expect(journal.at(-1)).toEqual({
      type: "approved",
      at: 1_500,
      callId: "m1",
      argsSha256: moveSha,
      by: "ui",
    });
  });

  test("a tool without a rule, or with a rule the arguments do not meet, runs without asking", async () => {
    const { ledger } = setup();
    deliver(ledger, "b1", [call("o1", "observe")]);
    expect((await ledger.admit({ tool: "observe", args: { x: 1 } })).call.status).toBe("claimed");
  });

  test("a rejection: the call never runs, the model is told the operator's reason", async () => {
    const { ledger, journal } = setup();
    deliver(ledger, "b1", [call("m1", "move")]);
    const admission = ledger.admit({ tool: "move", args: { x: 1 } });
    await tick();
    ledger.decide("m1", { decision: "reject", by: "api", reason: "too close to the table" });
    const error = await rejection(admission);
    expect(error.message).toBe("rejected by the operator: too close to the table");
    expect(ledger.state().calls.get("m1")?.status).toBe("rejected");
    expect(journal.at(-1)).toMatchObject({ type: "rejected", by: "api", reason: "too close to the table" });
  });

  test("a decision bound to other arguments is refused; a second decision is refused; both change nothing", async () => {
    const { ledger, journal } = setup();
    deliver(ledger, "b1", [call("m1", "move")]);
    const admission = ledger.admit({ tool: "move", args: { x: 1 } });
    await tick();
    const otherSha = argumentsSha256(canonicalArguments({ x: 2 }));
    const before = journal.length;
    expect(() => ledger.decide("m1", { decision: "approve", by: "api", argsSha256: otherSha })).toThrow(
      /arguments have/,
    );
    expect(journal.length).toBe(before);
    expect(ledger.state().calls.get("m1")?.status).toBe("awaiting_approval");
    ledger.decide("m1", { decision: "approve", by: "api" });
    await admission;
    let second: unknown;
    try {
      ledger.decide("m1", { decision: "reject", by: "ui", reason: "changed my mind" });
    } catch (error) {
      second = error;
    }
    expect(second).toBeInstanceOf(SidecarError);
    expect((second as SidecarError).kind).toBe("conflict");
    expect((second as SidecarError).message).toContain("already approved (api)");
    expect(ledger.state().calls.get("m1")?.status).toBe("approved");
    expect(() => ledger.decide("nope", { decision: "approve", by: "api" })).toThrow(/no call "nope"/);
  });

  test("no decision in time: rejected by timeout, nothing runs, and a late approval changes nothing", async () => {
    const { ledger, journal } = setup({ approvalTimeoutMs: 30 });
    deliver(ledger, "b1", [call("m1", "move")]);
    const error = await rejection(ledger.admit({ tool: "move", args: { x: 1 } }));
    expect(error.message).toBe("rejected by the operator: no decision within 30 ms");
    expect(journal.at(-1)).toMatchObject({ type: "rejected", by: "timeout" });
    expect(() => ledger.decide("m1", { decision: "approve", by: "ui" })).toThrow(
      /already rejected \(timeout/,
    );
    expect(ledger.state().calls.get("m1")?.status).toBe("rejected");
  });

  test("a client that withdraws the call while it awaits approval: rejected by client, nothing runs", async () => {
    const { ledger, journal } = setup();
    deliver(ledger, "b1", [call("m1", "move")]);
    const gone = new AbortController();
    const admission = ledger.admit({ tool: "move", args: { x: 1 } }, { withdrawn: gone.signal });
    await tick();
    gone.abort();
    const error = await rejection(admission);
    expect(error.message).toBe("not run: the client withdrew the call before a decision");
    expect(journal.at(-1)).toMatchObject({ type: "rejected", by: "client" });
    expect(() => ledger.decide("m1", { decision: "approve", by: "ui" })).toThrow(/already rejected \(client/);
  });

  test("closing the episode rejects what awaits approval; nothing runs", async () => {
    const { ledger, journal } = setup();
    deliver(ledger, "b1", [call("m1", "move")]);
    const admission = ledger.admit({ tool: "move", args: { x: 1 } });
    await tick();
    ledger.close("cancelled by the control API");
    const error = await rejection(admission);
    expect(error.kind).toBe("episode_closed");
    expect(error.message).toContain(
      "not run: admission closed before a decision (cancelled by the control API)",
    );
    expect(journal.at(-1)).toMatchObject({ type: "rejected", by: "closed" });
    expect((await ledger.drain({ timeoutMs: 10 })).unfinished).toEqual([]);
  });

  test("a restart while a call awaits approval lists it as rejected, never runnable, never uncertain", async () => {
    const { ledger, journal } = setup();
    deliver(ledger, "b1", [call("m1", "move")]);
    void ledger.admit({ tool: "move", args: { x: 1 } }).catch(() => {});
    await tick();
    // kill -9 here: the journal is all a restart has.
    const written: LedgerEvent[] = [];
    const restored = restoreEpisodeLedger(journal, {
      journal: { append: (event) => written.push(event) },
      deliveryWaitMs: 10,
      previousAckWaitMs: 10,
    });
    expect(written.map((e) => e.type)).toEqual(["rejected", "interrupted"]);
    expect(written[0]).toMatchObject({ callId: "m1", by: "restart" });
    expect(restored.summary()).toMatchObject({
      uncertain: [],
      awaitingApproval: [],
      counts: { rejected: 1 },
    });
    expect(restored.pendingApprovals()).toEqual([]);
    expect(() => restored.decide("m1", { decision: "approve", by: "ui" })).toThrow(
      /already rejected \(restart/,
    );
    const again = await rejection(
      restored.admit({ tool: "move", args: { x: 1 }, identity: { kind: "call_id", value: "m1" } }),
    );
    expect(again.message).toContain("admission is closed");
    // The journal with the restart's events folds to the same state.
    expect(foldJournal([...journal, ...written])).toEqual(restored.state());
  });

  test("a later call of the batch waits for the approved call's acknowledgement; after a rejection it goes ahead", async () => {
    const { ledger } = setup({ previousAckWaitMs: 1_000 });
    deliver(ledger, "b1", [call("m1", "move"), call("o1", "observe")]);
    const move = ledger.admit({ tool: "move", args: { x: 1 } }).catch((e: Error) => e);
    await tick();
    let observed = false;
    const observe = ledger.admit({ tool: "observe", args: { x: 1 } }).then((a) => {
      observed = true;
      return a;
    });
    await tick(20);
    expect(observed).toBe(false);
    ledger.decide("m1", { decision: "reject", by: "ui", reason: "no" });
    expect(await move).toBeInstanceOf(SidecarError);
    expect((await observe).call.id).toBe("o1");
  });
});

describe("rate limits", () => {
  test("over the tool's limit: rate_limited, journaled, nothing runs; the error names the limit", async () => {
    const { ledger, journal, clock } = setup();
    deliver(ledger, "b1", [call("g1", "grip"), call("g2", "grip", { x: 2 })]);
    const first = await ledger.admit({ tool: "grip", args: { x: 1 } });
    first.submitted();
    first.acknowledged("j1");
    first.receipt({ ok: true });
    clock.now += 50;
    const tooSoon = await rejection(ledger.admit({ tool: "grip", args: { x: 2 } }));
    expect(tooSoon.message).toContain("at least 100 ms between calls (rate.min_interval_ms)");
    expect(ledger.state().calls.get("g2")?.status).toBe("rate_limited");
    expect(journal.at(-1)).toMatchObject({ type: "rate_limited", callId: "g2", limit: "min_interval_ms" });

    deliver(ledger, "b2", [call("g3", "grip", { x: 3 }), call("g4", "grip", { x: 4 })]);
    clock.now += 200;
    const second = await ledger.admit({ tool: "grip", args: { x: 3 } });
    second.failed("robot said no");
    clock.now += 200;
    const perMinute = await rejection(ledger.admit({ tool: "grip", args: { x: 4 } }));
    expect(perMinute.message).toContain("at most 2 call(s) per minute (rate.per_minute)");
    clock.now += 60_000;
    deliver(ledger, "b3", [call("g5", "grip", { x: 5 })]);
    expect((await ledger.admit({ tool: "grip", args: { x: 5 } })).call.id).toBe("g5");
  });
});
