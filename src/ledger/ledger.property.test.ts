/**
 * Property tests of the pure ledger: random interleavings of registrations (with
 * duplicate arguments and reused ids), deliveries, revocations, callbacks (with
 * and without identity, forged ids and arguments), executor steps, bounded-wait
 * timeouts, closes and restarts (replay of the journal so far), and the holds of a
 * tool's policy: approval requested, decided (with the right or another arguments
 * digest), expired; rate limited.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SidecarError } from "../lib/errors.ts";
import { argumentsSha256, canonicalArguments } from "./canonical-arguments.ts";
import type { LedgerEventBody } from "./events.ts";
import {
  answerStop,
  type CallStatus,
  callStatuses,
  callsInDeliveryOrder,
  checkBatchOrder,
  closeAdmission,
  createLedgerState,
  decideApproval,
  type ExecutionStep,
  expireApproval,
  foldJournal,
  interruptLedger,
  jobsInFlight,
  type LedgerCall,
  type LedgerState,
  limitRate,
  markDelivered,
  recordExecution,
  registerBatch,
  replayJournal,
  requestApproval,
  requestStop,
  revokeBatch,
  runningStatuses,
  skipUnclaimedPredecessors,
  summarizeLedger,
  summaryClaimedLimit,
  type Transition,
} from "./ledger-state.ts";
import {
  type LedgerCallback,
  type MatchOutcome,
  matchCallback,
  refusedByNameAndArgs,
} from "./match-callback.ts";

/**
 * Hundreds of generated cases of CPU-bound work: seconds alone, several times that on a
 * loaded machine, so the test says its own limit rather than take bun's 5 s default
 * (bunfig.toml cannot set it; only `--timeout` on the command line can).
 */
const cpuBoundTimeoutMs = 60_000;

const tools = ["record", "observe"] as const;
const argPool = [
  { nonce: "a" },
  { nonce: "b" },
  { nonce: "a", _callID: "x", wait_for_previous: true },
  { nonce: "z" },
];

const opArbitrary = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      op: fc.constant("register" as const),
      calls: fc.array(
        fc.record({
          tool: fc.nat(1),
          args: fc.nat(2),
          reuseId: fc.oneof({ weight: 12, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat() }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
    }),
  },
  { weight: 10, arbitrary: fc.record({ op: fc.constant("deliver" as const), batch: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("revoke" as const), batch: fc.nat() }) },
  {
    weight: 24,
    arbitrary: fc.record({
      op: fc.constant("callback" as const),
      tool: fc.nat(1),
      args: fc.nat(3),
      /** When set, take tool and arguments from this known call (a plausible, not forged, callback). */
      copyOf: fc.option(fc.nat(), { freq: 4 }),
      identity: fc.oneof(
        fc.constant({ kind: "none" as const }),
        fc.record({ kind: fc.constant("known" as const), ref: fc.nat() }),
        fc.constant({ kind: "forged" as const }),
      ),
    }),
  },
  {
    weight: 30,
    arbitrary: fc.record({
      op: fc.constant("execute" as const),
      call: fc.nat(),
      /** null: the step that follows the call's status (acknowledged or failed after submitted, …). */
      step: fc.option(fc.nat(3), { freq: 3 }),
      /** Pick among running calls rather than all calls. */
      running: fc.boolean(),
    }),
  },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("timeout" as const), call: fc.nat() }) },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant("hold" as const),
      call: fc.nat(),
      kind: fc.constantFrom("approval" as const, "rate" as const),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant("decide" as const),
      call: fc.nat(),
      approve: fc.boolean(),
      /** Pick among calls awaiting approval rather than all calls. */
      awaiting: fc.boolean(),
      otherArguments: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("expire" as const), call: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("stop" as const), call: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("close" as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("restart" as const) }) },
);
type Op = typeof opArbitrary extends fc.Arbitrary<infer T> ? T : never;

/** Drives the pure machine, tracking on the side what the invariants need. */
/**
 * Matching without a call id by its definition: every batch, newest first, each one's
 * calls of the tool and arguments in delivery order. The ledger answers from its
 * match groups instead; both must give the same outcome, refusal counts included.
 */
function scanMatch(state: LedgerState, tool: string, args: string): MatchOutcome {
  const byBatch = new Map<string, LedgerCall[]>();
  for (const call of callsInDeliveryOrder(state)) {
    if (call.tool === tool && call.canonicalArgs === args)
      byBatch.set(call.batchId, [...(byBatch.get(call.batchId) ?? []), call]);
  }
  let claimed = 0;
  let unavailable = 0;
  for (const [batchId, matches] of [...byBatch].reverse()) {
    const open = matches.find((call) => call.status === "delivered");
    if (open !== undefined) return { kind: "admitted", call: open };
    if (matches.some((call) => call.status === "pending")) return { kind: "wait", batchId };
    const taken = matches.filter((call) => call.status !== "revoked" && call.status !== "skipped").length;
    claimed += taken;
    unavailable += matches.length - taken;
  }
  return refusedByNameAndArgs(tool, claimed, unavailable);
}

const outcomeShape = (outcome: MatchOutcome) =>
  outcome.kind === "admitted" ? { kind: "admitted", id: outcome.call.id } : outcome;

function simulate(ops: Op[]) {
  let state: LedgerState = createLedgerState();
  const journal: LedgerEventBody[] = [];
  const batchIds: string[] = [];
  const callIds: string[] = [];
  /** Batches whose delivery this process observed, and revocations. */
  const delivered = new Set<string>();
  const revoked = new Set<string>();
  /** Calls registered before the latest restart. */
  const beforeRestart = new Set<string>();
  const admitted = new Set<string>();
  /** Calls an operator approved (the only held calls that may reach the executor). */
  const approved = new Set<string>();
  const submittedOrder = new Map<string, number[]>();
  let fresh = 0;
  let closed = false;

  const apply = (next: Transition) => {
    state = next.state;
    journal.push(...next.events);
  };
  /** Invalid operations must throw a SidecarError and change nothing. */
  const attempt = (run: () => Transition) => {
    const before = state;
    try {
      apply(run());
    } catch (error) {
      expect(error).toBeInstanceOf(SidecarError);
      expect(state).toBe(before);
    }
  };
  const pick = <T>(list: readonly T[], n: number): T | undefined => list[n % Math.max(1, list.length)];
  /** Delivers or revokes a batch picked by `n`; notes it in `seen` when the batch took that status. */
  const settleBatch = (
    n: number,
    settle: (state: LedgerState, batchId: string) => Transition,
    status: "delivered" | "revoked",
    seen: Set<string>,
  ) => {
    const batchId = pick(batchIds, n);
    if (batchId === undefined) return;
    attempt(() => settle(state, batchId));
    if (state.batches.get(batchId)?.status === status) seen.add(batchId);
  };

  for (const op of ops) {
    switch (op.op) {
      case "register": {
        const batchId = `b${fresh++}`;
        const calls = op.calls.map((c) => ({
          id: (c.reuseId === null ? undefined : pick(callIds, c.reuseId)) ?? `c${fresh++}`,
          modelName: `mcp__ura__${tools[c.tool]}`,
          tool: tools[c.tool] ?? "record",
          args: argPool[c.args] ?? {},
        }));
        const ids = calls.map((c) => c.id);
        const duplicate = new Set(ids).size !== ids.length || ids.some((id) => callIds.includes(id));
        const closed = state.admission === "closed";
        let threw = false;
        attempt(() => {
          try {
            return registerBatch(state, { batchId, calls });
          } catch (error) {
            threw = true;
            throw error;
          }
        });
        expect(threw).toBe(duplicate || closed);
        if (!threw) {
          batchIds.push(batchId);
          callIds.push(...ids);
        }
        break;
      }
      case "deliver":
        settleBatch(op.batch, markDelivered, "delivered", delivered);
        break;
      case "revoke":
        settleBatch(op.batch, revokeBatch, "revoked", revoked);
        break;
      case "callback": {
        const identity =
          op.identity.kind === "none"
            ? undefined
            : op.identity.kind === "forged"
              ? "forged-id"
              : pick(callIds, op.identity.ref);
        const copied = op.copyOf === null ? undefined : state.calls.get(pick(callIds, op.copyOf) ?? "");
        const callback: LedgerCallback = {
          tool: copied?.tool ?? tools[op.tool] ?? "record",
          args: copied?.args ?? argPool[op.args] ?? {},
          ...(identity === undefined ? {} : { identity: { kind: "call_id" as const, value: identity } }),
        };
        const previous = state;
        const result = matchCallback(state, callback);
        apply(result);
        const outcome = result.outcome;
        if (identity === undefined && previous.admission === "open") {
          const expected = scanMatch(previous, callback.tool, canonicalArguments(callback.args));
          expect(outcomeShape(outcome)).toEqual(outcomeShape(expected));
        }
        if (outcome.kind === "admitted") {
          const call = outcome.call;
          // Never twice, never undelivered, never from before a restart, never another call than named.
          expect(previous.calls.get(call.id)?.status).toBe("delivered");
          expect(closed).toBe(false);
          expect(admitted.has(call.id)).toBe(false);
          admitted.add(call.id);
          expect(delivered.has(call.batchId)).toBe(true);
          expect(revoked.has(call.batchId)).toBe(false);
          expect(beforeRestart.has(call.id)).toBe(false);
          expect(call.tool).toBe(callback.tool);
          expect(call.canonicalArgs).toBe(canonicalArguments(callback.args));
          if (identity !== undefined) expect(call.id).toBe(identity);
        } else if (outcome.kind === "wait") {
          expect(state.batches.get(outcome.batchId)?.status).toBe("pending");
        }
        break;
      }
      case "execute": {
        const running = callIds.filter((id) =>
          ["claimed", "approved", "submitted", "acknowledged"].includes(state.calls.get(id)?.status ?? ""),
        );
        const callId = pick(op.running && running.length > 0 ? running : callIds, op.call);
        if (callId === undefined) break;
        const status = state.calls.get(callId)?.status;
        const natural =
          status === "claimed" || status === "approved"
            ? 0
            : status === "submitted"
              ? 1 + (op.call % 3)
              : 2 + (op.call % 2);
        const steps: ExecutionStep[] = [
          { type: "submitted" },
          { type: "acknowledged", jobId: `j-${callId}` },
          { type: "receipt", result: { ok: true } },
          { type: "failed", reason: "robot error" },
        ];
        const step = steps[op.step ?? natural] ?? { type: "submitted" };
        const before = state;
        attempt(() => recordExecution(state, callId, step));
        // A held call (awaiting, rejected, rate limited) takes no executor step at all.
        if (["awaiting_approval", "rejected", "rate_limited"].includes(status ?? ""))
          expect(state).toBe(before);
        if (state !== before && step.type === "submitted") {
          // Only admitted calls reach the executor, in batch order; a call that awaited approval only once approved.
          expect(admitted.has(callId)).toBe(true);
          const call = state.calls.get(callId);
          if (call === undefined) throw new Error("submitted an unknown call");
          if (call.approval !== undefined) {
            expect(approved.has(callId)).toBe(true);
            expect(["ui", "api"]).toContain(call.approval.by ?? "none");
          }
          const batch = state.batches.get(call.batchId)?.callIds ?? [];
          for (const earlier of batch.slice(0, call.index)) {
            const status = state.calls.get(earlier)?.status;
            expect(["acknowledged", "completed", "failed", "skipped", "rejected", "rate_limited"]).toContain(
              status ?? "unknown",
            );
          }
          const order = submittedOrder.get(call.batchId) ?? [];
          expect(order.every((index) => index < call.index)).toBe(true);
          submittedOrder.set(call.batchId, [...order, call.index]);
        }
        break;
      }
      case "timeout": {
        const claimedIds = callIds.filter((id) => state.calls.get(id)?.status === "claimed");
        const callId = pick(claimedIds, op.call);
        if (callId === undefined) break;
        apply(skipUnclaimedPredecessors(state, callId, "timeout"));
        const gate = checkBatchOrder(state, callId);
        if (gate.kind === "blocked") {
          expect(gate.unclaimed).toEqual([]);
          apply(recordExecution(state, callId, { type: "failed", reason: "earlier call not acknowledged" }));
        }
        break;
      }
      case "hold": {
        const claimedIds = callIds.filter((id) => state.calls.get(id)?.status === "claimed");
        const callId = pick(op.call % 2 === 0 && claimedIds.length > 0 ? claimedIds : callIds, op.call);
        if (callId === undefined) break;
        const status = state.calls.get(callId)?.status;
        const before = state;
        attempt(() =>
          op.kind === "approval"
            ? requestApproval(state, callId, { rule: "always", expiresAt: 0 })
            : limitRate(state, callId, { limit: "per_minute", reason: "over" }),
        );
        // Only a claimed call can be held.
        if (status !== "claimed") expect(state).toBe(before);
        break;
      }
      case "decide": {
        const awaitingIds = callIds.filter((id) => state.calls.get(id)?.status === "awaiting_approval");
        const callId = pick(op.awaiting && awaitingIds.length > 0 ? awaitingIds : callIds, op.call);
        if (callId === undefined) break;
        const call = state.calls.get(callId);
        const sha = argumentsSha256(
          op.otherArguments ? `${call?.canonicalArgs}x` : (call?.canonicalArgs ?? ""),
        );
        const before = state;
        attempt(() =>
          decideApproval(state, callId, {
            decision: op.approve ? "approve" : "reject",
            by: "api",
            reason: "r",
            argsSha256: sha,
          }),
        );
        const decided = state !== before;
        // A decision applies exactly to a call awaiting approval, named with its own arguments' digest.
        expect(decided).toBe(call?.status === "awaiting_approval" && !op.otherArguments);
        if (decided) {
          expect(state.calls.get(callId)?.status).toBe(op.approve ? "approved" : "rejected");
          if (op.approve) approved.add(callId);
        }
        break;
      }
      case "expire": {
        const awaitingIds = callIds.filter((id) => state.calls.get(id)?.status === "awaiting_approval");
        const callId = pick(awaitingIds, op.call);
        if (callId === undefined) break;
        apply(expireApproval(state, callId, "timeout", "no decision"));
        expect(state.calls.get(callId)?.status).toBe("rejected");
        break;
      }
      case "stop": {
        // A stop asked of the executor is journaled and answered; it changes no call's state.
        const jobs = jobsInFlight(state);
        const job = pick(jobs, op.call);
        if (job === undefined) break;
        const before = state;
        apply(requestStop(state, job.callId, "abandoned"));
        apply(answerStop(state, job.callId, "abandoned", { status: 200, stopped: true, detail: "" }));
        expect(state).toBe(before);
        expect(state.calls.get(job.callId)?.status).toBe("acknowledged");
        break;
      }
      case "close":
        apply(closeAdmission(state, "cancelled"));
        closed = true;
        // Nothing awaits approval in a closed ledger: it would wait for a decision that can no longer let it run.
        expect(summarizeLedger(state).awaitingApproval).toEqual([]);
        break;
      case "restart": {
        const live = summarizeLedger(state);
        const replayed = replayJournal(journal);
        // A call that awaited approval is rejected by the restart: never runnable again.
        const awaiting = live.awaitingApproval.length;
        expect(summarizeLedger(replayed)).toEqual({
          ...live,
          counts: {
            ...live.counts,
            awaiting_approval: 0,
            rejected: (live.counts.rejected ?? 0) + awaiting,
          },
          admission: "closed",
          interrupted: true,
          uncertain: live.unfinished,
          awaitingApproval: [],
        });
        // What a restarted sidecar does: fold the journal, then journal the interruption.
        apply(interruptLedger(foldJournal(journal)));
        expect(state.admission).toBe("closed");
        for (const id of callIds) beforeRestart.add(id);
        closed = true;
        break;
      }
      default:
        throw new Error(`unknown op ${JSON.stringify(op satisfies never)}`);
    }
    // The journal describes the live state exactly.
    expect(foldJournal(journal)).toEqual(state);
    // The summary read from the counts and indexes kept with each event is the one read from every call.
    expect(summarizeLedger(state)).toEqual(summaryOfEveryCall(state));
  }
  return { state, journal, admitted };
}

/** The ledger's summary by definition: every call visited. */
function summaryOfEveryCall(state: LedgerState) {
  const calls = [...state.calls.values()];
  const counts = Object.fromEntries(callStatuses.map((status) => [status, 0])) as Record<CallStatus, number>;
  for (const call of calls) counts[call.status] += 1;
  const claimed = calls
    .filter((call) => call.claimOrder !== undefined)
    .sort((a, b) => (a.claimOrder ?? 0) - (b.claimOrder ?? 0));
  const unfinished = claimed.filter((call) => runningStatuses.includes(call.status)).map((call) => call.id);
  return {
    admission: state.admission,
    interrupted: state.interrupted,
    batches: state.batches.size,
    calls: state.calls.size,
    counts,
    claimed: claimed.slice(-summaryClaimedLimit).map((call) => call.id),
    claimedTotal: claimed.length,
    unfinished,
    uncertain: state.interrupted ? unfinished : [],
    awaitingApproval: callsInDeliveryOrder(state)
      .filter((call) => call.status === "awaiting_approval")
      .map((call) => call.id),
    refusedCallbacks: state.refusedCallbacks,
  };
}

describe("ledger properties", () => {
  test(
    "no call is admitted twice, undelivered, out of batch order, or after a restart; replay equals live",
    () => {
      fc.assert(
        fc.property(fc.array(opArbitrary, { minLength: 5, maxLength: 80, size: "max" }), (ops) => {
          const { state, journal, admitted } = simulate(ops);
          const summary = summarizeLedger(state);
          expect(new Set(summary.claimed)).toEqual(admitted);
          expect(summary.claimed.length).toBe(admitted.size);
          const replayed = replayJournal(journal);
          // After a replay nothing from before is admissible, whatever the identity offered.
          for (const call of replayed.calls.values()) {
            for (const identity of [undefined, { kind: "call_id" as const, value: call.id }]) {
              const { outcome } = matchCallback(replayed, {
                tool: call.tool,
                args: call.args,
                ...(identity && { identity }),
              });
              expect(outcome).toMatchObject({ kind: "refused", code: "admission_closed" });
            }
          }
          expect(summarizeLedger(replayed).uncertain).toEqual(summary.unfinished);
        }),
        { numRuns: 400 },
      );
    },
    cpuBoundTimeoutMs,
  );

  test(
    "every prefix of a journal replays to a closed, interrupted state",
    () => {
      fc.assert(
        fc.property(fc.array(opArbitrary, { maxLength: 40, size: "max" }), fc.nat(), (ops, cut) => {
          const { journal } = simulate(ops.filter((op) => op.op !== "restart"));
          const prefix = journal.slice(0, cut % (journal.length + 1));
          const replayed = replayJournal(prefix);
          expect(replayed.admission).toBe("closed");
          expect(replayed.interrupted).toBe(true);
          expect(summarizeLedger(replayed).uncertain).toEqual(
            summarizeLedger(foldJournal(prefix)).unfinished,
          );
        }),
        { numRuns: 200 },
      );
    },
    cpuBoundTimeoutMs,
  );

  test("identical calls: each callback gets a distinct call, in delivery order, then refusal", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 8 }), (copies, callbacks) => {
        const calls = Array.from({ length: copies }, (_, i) => ({
          id: `c${i}`,
          modelName: "ura_record",
          tool: "record",
          args: { nonce: "n", i: 0 },
        }));
        let state = registerBatch(createLedgerState(), { batchId: "b", calls }).state;
        state = markDelivered(state, "b").state;
        const outcomes: string[] = [];
        for (let k = 0; k < callbacks; k++) {
          const result = matchCallback(state, { tool: "record", args: { i: 0, nonce: "n" } });
          state = result.state;
          outcomes.push(result.outcome.kind === "admitted" ? result.outcome.call.id : result.outcome.kind);
        }
        const expected = Array.from({ length: callbacks }, (_, k) => (k < copies ? `c${k}` : "refused"));
        expect(outcomes).toEqual(expected);
      }),
    );
  });
});
