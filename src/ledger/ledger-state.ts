/**
 * The delivered-call ledger of one episode as a pure state machine: no I/O, no
 * timers. It decides which MCP callback may run which tool call the model really
 * delivered, so robot work runs only when the model asked for it, and at most once.
 *
 * Event-sourced: every decision function validates, produces journal events and
 * folds them with `applyLedgerEvent`, the one place state changes. A restarted
 * sidecar folds its journal the same way (`replayJournal`), so the replayed state
 * is the live state by construction, then marks it interrupted: admission closed
 * for good, claimed calls without an outcome reported as uncertain.
 * See DESIGN.md §5, issue 3 ("Delivered-call ledger") and issue 10 ("Crash safety").
 */
import { SidecarError } from "../lib/errors.ts";
import { canonicalArguments } from "./canonical-arguments.ts";
import type { LedgerBatchInput, LedgerEventBody, RefusalCode } from "./events.ts";

/**
 * pending → delivered | revoked; delivered → claimed | skipped;
 * claimed → submitted → acknowledged → completed (receipt) | failed.
 */
export type CallStatus =
  | "pending"
  | "delivered"
  | "revoked"
  | "skipped"
  | "claimed"
  | "submitted"
  | "acknowledged"
  | "completed"
  | "failed";

export const callStatuses: readonly CallStatus[] = [
  "pending",
  "delivered",
  "revoked",
  "skipped",
  "claimed",
  "submitted",
  "acknowledged",
  "completed",
  "failed",
];

/** Claimed and not yet finished: work the executor may be doing. */
const runningStatuses: readonly CallStatus[] = ["claimed", "submitted", "acknowledged"];
/** A predecessor in these states no longer holds back the next call of its batch. */
const releasingStatuses: readonly CallStatus[] = [
  "acknowledged",
  "completed",
  "failed",
  "skipped",
  "revoked",
];

export interface LedgerCall {
  readonly id: string;
  readonly batchId: string;
  readonly exchangeId: string;
  /** Position within the batch. */
  readonly index: number;
  readonly modelName: string;
  readonly tool: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly canonicalArgs: string;
  readonly status: CallStatus;
  /** 1-based position among all claims of the episode. */
  readonly claimOrder?: number;
  readonly claimedBy?: "call_id" | "name_args";
  readonly jobId?: string;
  /** Why the call was skipped or failed. */
  readonly reason?: string;
}

export interface LedgerBatch {
  readonly batchId: string;
  readonly exchangeId: string;
  readonly status: "pending" | "delivered" | "revoked";
  readonly callIds: readonly string[];
}

export interface LedgerState {
  readonly admission: "open" | "closed";
  readonly closedReason?: string;
  /** Rebuilt from a journal after a restart: nothing from before may run. */
  readonly interrupted: boolean;
  /** Batch ids in registration (= delivery) order. */
  readonly batchOrder: readonly string[];
  readonly batches: ReadonlyMap<string, LedgerBatch>;
  readonly calls: ReadonlyMap<string, LedgerCall>;
  readonly claims: number;
  readonly refusedCallbacks: number;
}

/** An MCP tool callback asking to run a call. */
export interface LedgerCallback {
  /** Manifest tool name. */
  readonly tool: string;
  /** Arguments as the client sent them (private keys are ignored by canonicalisation). */
  readonly args: unknown;
  /** The model call id, when the client offers one (`_meta`, or the `_callID` argument). */
  readonly identity?: { readonly kind: "call_id"; readonly value: string };
}

export type MatchOutcome =
  | { readonly kind: "admitted"; readonly call: LedgerCall }
  /** Only a call whose delivery is still in progress matches: wait for the batch's outcome, then match again. */
  | { readonly kind: "wait"; readonly batchId: string }
  | { readonly kind: "refused"; readonly code: RefusalCode; readonly reason: string };

/** Whether a claimed call may go to the executor now (batch order). */
export type BatchOrderGate =
  | { readonly kind: "ready" }
  | {
      readonly kind: "blocked";
      /** Earlier calls of the batch nobody has claimed yet. */
      readonly unclaimed: readonly string[];
      /** Earlier calls claimed but not yet acknowledged by the executor. */
      readonly running: readonly string[];
    };

export type ExecutionStep =
  | { readonly type: "submitted" }
  | { readonly type: "acknowledged"; readonly jobId: string }
  | { readonly type: "receipt"; readonly result: unknown }
  | { readonly type: "failed"; readonly reason: string };

export interface Transition {
  readonly state: LedgerState;
  readonly events: readonly LedgerEventBody[];
}

export interface LedgerSummary {
  readonly admission: "open" | "closed";
  readonly interrupted: boolean;
  readonly batches: number;
  readonly calls: number;
  readonly counts: Readonly<Record<CallStatus, number>>;
  /** Every call ever claimed, in claim order. */
  readonly claimed: readonly string[];
  /** Claimed calls without a receipt or failure, in claim order. */
  readonly unfinished: readonly string[];
  /** After a restart: the unfinished calls, which may or may not have run. */
  readonly uncertain: readonly string[];
  readonly refusedCallbacks: number;
}

export function createLedgerState(): LedgerState {
  return {
    admission: "open",
    interrupted: false,
    batchOrder: [],
    batches: new Map(),
    calls: new Map(),
    claims: 0,
    refusedCallbacks: 0,
  };
}

/**
 * Register the tool calls of a response about to be sent. Duplicate call ids
 * (within the batch or the episode) are an upstream error and register nothing.
 */
export function registerBatch(state: LedgerState, batch: LedgerBatchInput): Transition {
  if (state.admission === "closed") {
    throw new SidecarError("episode_closed", `cannot deliver tool calls: ${closedText(state)}`);
  }
  if (state.batches.has(batch.batchId)) {
    throw new SidecarError("internal", `batch ${batch.batchId} is already registered`);
  }
  const seen = new Set<string>();
  for (const call of batch.calls) {
    if (seen.has(call.id) || state.calls.has(call.id)) {
      throw new SidecarError(
        "upstream_invalid",
        `the model reused tool call id ${JSON.stringify(call.id)}; call ids must be unique within an episode`,
      );
    }
    seen.add(call.id);
    canonicalArguments(call.args);
  }
  return transition(state, [
    {
      type: "registered",
      batchId: batch.batchId,
      exchangeId: batch.exchangeId,
      calls: batch.calls.map(({ id, modelName, tool, args }) => ({ id, modelName, tool, args })),
    },
  ]);
}

/** The response carrying this batch was fully written: its calls become claimable. Idempotent. */
export function markDelivered(state: LedgerState, batchId: string): Transition {
  const batch = requireBatch(state, batchId);
  if (batch.status === "delivered") return { state, events: [] };
  if (batch.status === "revoked") {
    throw new SidecarError("internal", `batch ${batchId} was revoked and cannot be marked delivered`);
  }
  return transition(state, [{ type: "delivered", batchId }]);
}

/** Sending the response failed (client gone): its calls can never be claimed. Idempotent. */
export function revokeBatch(state: LedgerState, batchId: string, reason = "delivery failed"): Transition {
  const batch = requireBatch(state, batchId);
  if (batch.status === "revoked") return { state, events: [] };
  if (batch.status === "delivered") {
    throw new SidecarError("internal", `batch ${batchId} was already delivered and cannot be revoked`);
  }
  return transition(state, [{ type: "revoked", batchId, reason }]);
}

/**
 * Match a callback to a delivered call, strongest identity first. With a call
 * id, only that call can match; without one, the first unclaimed call of the
 * same tool and canonical arguments in delivery order. An admitted call is
 * claimed; a refusal is recorded; `wait` changes nothing.
 */
export function matchCallback(
  state: LedgerState,
  callback: LedgerCallback,
): Transition & { outcome: MatchOutcome } {
  const outcome = decideMatch(state, callback);
  switch (outcome.kind) {
    case "admitted": {
      const by = callback.identity === undefined ? "name_args" : "call_id";
      const next = transition(state, [{ type: "claimed", callId: outcome.call.id, by }]);
      return { ...next, outcome: { kind: "admitted", call: requireCall(next.state, outcome.call.id) } };
    }
    case "wait":
      return { state, events: [], outcome };
    case "refused":
      return { ...refuseCallback(state, callback, outcome.code, outcome.reason), outcome };
    default:
      return assertNever(outcome);
  }
}

/** Record a refusal decided outside `matchCallback` (e.g. the delivery wait ran out). */
export function refuseCallback(
  state: LedgerState,
  callback: LedgerCallback,
  code: RefusalCode,
  reason: string,
): Transition {
  return transition(state, [
    {
      type: "refused",
      tool: callback.tool,
      arguments: safeCanonical(callback.args),
      ...(callback.identity === undefined ? {} : { callId: callback.identity.value }),
      code,
      reason,
    },
  ]);
}

function decideMatch(state: LedgerState, callback: LedgerCallback): MatchOutcome {
  if (state.admission === "closed") {
    return { kind: "refused", code: "admission_closed", reason: closedText(state) };
  }
  let args: string;
  try {
    args = canonicalArguments(callback.args);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { kind: "refused", code: "arguments_differ", reason: `the callback's ${reason}` };
  }
  if (callback.identity !== undefined) return decideById(state, callback.tool, args, callback.identity.value);

  let pendingBatch: string | undefined;
  let claimed = 0;
  let unavailable = 0;
  for (const call of callsInDeliveryOrder(state)) {
    if (call.tool !== callback.tool || call.canonicalArgs !== args) continue;
    if (call.status === "delivered") return { kind: "admitted", call };
    if (call.status === "pending") pendingBatch ??= call.batchId;
    else if (runningStatuses.includes(call.status) || call.status === "completed" || call.status === "failed")
      claimed++;
    else unavailable++;
  }
  if (pendingBatch !== undefined) return { kind: "wait", batchId: pendingBatch };
  const also =
    claimed + unavailable === 0
      ? ""
      : ` (${claimed} matching call(s) already claimed, ${unavailable} revoked or skipped)`;
  return {
    kind: "refused",
    code: claimed > 0 ? "already_claimed" : "no_match",
    reason: `no delivered call matches tool ${callback.tool} with these arguments${also}`,
  };
}

function decideById(state: LedgerState, tool: string, args: string, callId: string): MatchOutcome {
  const call = state.calls.get(callId);
  const name = JSON.stringify(callId);
  if (call === undefined) {
    return { kind: "refused", code: "no_match", reason: `no delivered call matches call id ${name}` };
  }
  if (call.tool !== tool) {
    return {
      kind: "refused",
      code: "tool_differs",
      reason: `call ${name} is a call of ${call.tool}, not ${tool}`,
    };
  }
  if (call.canonicalArgs !== args) {
    return {
      kind: "refused",
      code: "arguments_differ",
      reason: `call ${name}'s arguments differ from the delivered ones`,
    };
  }
  switch (call.status) {
    case "delivered":
      return { kind: "admitted", call };
    case "pending":
      return { kind: "wait", batchId: call.batchId };
    case "revoked":
      return { kind: "refused", code: "revoked", reason: `call ${name} was revoked (delivery failed)` };
    case "skipped":
      return {
        kind: "refused",
        code: "skipped",
        reason: `call ${name} was skipped: ${call.reason ?? "a later call ran"}`,
      };
    case "claimed":
    case "submitted":
    case "acknowledged":
    case "completed":
    case "failed":
      return { kind: "refused", code: "already_claimed", reason: `call ${name} was already claimed` };
    default:
      return assertNever(call.status);
  }
}

/**
 * Whether claimed call `callId` may go to the executor: every earlier call of its
 * batch must be acknowledged, finished, skipped or revoked. Keeps executor order
 * = batch order even when a client sends a batch's calls concurrently.
 */
export function checkBatchOrder(state: LedgerState, callId: string): BatchOrderGate {
  const call = requireCall(state, callId);
  const batch = requireBatch(state, call.batchId);
  const unclaimed: string[] = [];
  const running: string[] = [];
  for (const earlierId of batch.callIds.slice(0, call.index)) {
    const earlier = requireCall(state, earlierId);
    if (releasingStatuses.includes(earlier.status)) continue;
    if (earlier.status === "pending" || earlier.status === "delivered") unclaimed.push(earlierId);
    else running.push(earlierId);
  }
  return unclaimed.length === 0 && running.length === 0
    ? { kind: "ready" }
    : { kind: "blocked", unclaimed, running };
}

/**
 * The bounded wait for earlier calls ran out: earlier calls nobody claimed become
 * `skipped` (never claimable afterwards), so `callId` can go ahead without ever
 * running out of batch order.
 */
export function skipUnclaimedPredecessors(state: LedgerState, callId: string, reason: string): Transition {
  const gate = checkBatchOrder(state, callId);
  if (gate.kind === "ready") return { state, events: [] };
  return transition(
    state,
    gate.unclaimed.map((id) => ({ type: "skipped" as const, callId: id, reason })),
  );
}

/** Executor progress of a claimed call. Out-of-order steps are bugs and throw. */
export function recordExecution(state: LedgerState, callId: string, step: ExecutionStep): Transition {
  const call = requireCall(state, callId);
  const allowed: Record<ExecutionStep["type"], readonly CallStatus[]> = {
    submitted: ["claimed"],
    acknowledged: ["submitted"],
    receipt: ["submitted", "acknowledged"],
    failed: ["claimed", "submitted", "acknowledged"],
  };
  if (!allowed[step.type].includes(call.status)) {
    throw new SidecarError(
      "internal",
      `cannot record ${step.type} for call ${callId} in state ${call.status}`,
    );
  }
  if (step.type === "submitted" && checkBatchOrder(state, callId).kind !== "ready") {
    throw new SidecarError(
      "internal",
      `call ${callId} cannot be submitted before the earlier calls of its batch`,
    );
  }
  return transition(state, [{ ...step, callId }]);
}

/** No callback is admitted after this (cancel, finish, shutdown). Idempotent. */
export function closeAdmission(state: LedgerState, reason: string): Transition {
  if (state.admission === "closed") return { state, events: [] };
  return transition(state, [{ type: "admission_closed", reason }]);
}

/** A restarted sidecar's view of the state it found: closed for good, unfinished calls uncertain. */
export function interruptLedger(state: LedgerState): Transition {
  return transition(state, [{ type: "interrupted", uncertain: unfinishedCalls(state) }]);
}

/** Rebuild the state from a journal (or any prefix of it) after a restart: interrupted, closed for good. */
export function replayJournal(events: readonly LedgerEventBody[]): LedgerState {
  return interruptLedger(foldJournal(events)).state;
}

/** The state a journal describes, exactly as it was live. Throws on an event that does not fit. */
export function foldJournal(events: readonly LedgerEventBody[]): LedgerState {
  let state = createLedgerState();
  for (const [index, event] of events.entries()) {
    try {
      state = applyLedgerEvent(state, event);
    } catch (error) {
      throw new SidecarError("internal", `ledger journal event ${index} (${event.type}) does not apply`, {
        cause: error,
      });
    }
  }
  return state;
}

export function summarizeLedger(state: LedgerState): LedgerSummary {
  const counts = Object.fromEntries(callStatuses.map((status) => [status, 0])) as Record<CallStatus, number>;
  for (const call of state.calls.values()) counts[call.status]++;
  const unfinished = unfinishedCalls(state);
  return {
    admission: state.admission,
    interrupted: state.interrupted,
    batches: state.batches.size,
    calls: state.calls.size,
    counts,
    claimed: claimedCalls(state).map((call) => call.id),
    unfinished,
    uncertain: state.interrupted ? unfinished : [],
    refusedCallbacks: state.refusedCallbacks,
  };
}

/** Claimed calls without receipt or failure, in claim order. */
export function unfinishedCalls(state: LedgerState): string[] {
  return claimedCalls(state)
    .filter((call) => runningStatuses.includes(call.status))
    .map((call) => call.id);
}

/** Every call in delivery order: batch order, then position in the batch. */
export function callsInDeliveryOrder(state: LedgerState): LedgerCall[] {
  return state.batchOrder.flatMap((batchId) =>
    requireBatch(state, batchId).callIds.map((callId) => requireCall(state, callId)),
  );
}

/** The single place state changes; used live and for replay. */
export function applyLedgerEvent(state: LedgerState, event: LedgerEventBody): LedgerState {
  switch (event.type) {
    case "registered": {
      const calls = new Map(state.calls);
      event.calls.forEach((call, index) => {
        calls.set(call.id, {
          ...call,
          batchId: event.batchId,
          exchangeId: event.exchangeId,
          index,
          canonicalArgs: canonicalArguments(call.args),
          status: "pending",
        });
      });
      const batch: LedgerBatch = {
        batchId: event.batchId,
        exchangeId: event.exchangeId,
        status: "pending",
        callIds: event.calls.map((call) => call.id),
      };
      return {
        ...state,
        batchOrder: [...state.batchOrder, event.batchId],
        batches: new Map(state.batches).set(event.batchId, batch),
        calls,
      };
    }
    case "delivered":
    case "revoked": {
      const status = event.type;
      const batch = requireBatch(state, event.batchId);
      const next = { ...state, batches: new Map(state.batches).set(batch.batchId, { ...batch, status }) };
      return updateCalls(
        next,
        batch.callIds.map((id) => ({ ...requireCall(state, id), status })),
      );
    }
    case "claimed": {
      const claims = state.claims + 1;
      const call = requireCall(state, event.callId);
      return updateCalls({ ...state, claims }, [
        { ...call, status: "claimed", claimOrder: claims, claimedBy: event.by },
      ]);
    }
    case "refused":
      return { ...state, refusedCallbacks: state.refusedCallbacks + 1 };
    case "skipped":
    case "failed":
      return updateCalls(state, [
        { ...requireCall(state, event.callId), status: event.type, reason: event.reason },
      ]);
    case "submitted":
      return updateCalls(state, [{ ...requireCall(state, event.callId), status: "submitted" }]);
    case "acknowledged":
      return updateCalls(state, [
        { ...requireCall(state, event.callId), status: "acknowledged", jobId: event.jobId },
      ]);
    case "receipt":
      return updateCalls(state, [{ ...requireCall(state, event.callId), status: "completed" }]);
    case "admission_closed":
      return state.admission === "closed"
        ? state
        : { ...state, admission: "closed", closedReason: event.reason };
    case "interrupted":
      return {
        ...state,
        interrupted: true,
        admission: "closed",
        closedReason: "the sidecar restarted; calls from before the restart are never run again",
      };
    default:
      return assertNever(event);
  }
}

function transition(state: LedgerState, events: LedgerEventBody[]): Transition {
  return { state: events.reduce(applyLedgerEvent, state), events };
}

function updateCalls(state: LedgerState, updated: LedgerCall[]): LedgerState {
  const calls = new Map(state.calls);
  for (const call of updated) calls.set(call.id, call);
  return { ...state, calls };
}

function claimedCalls(state: LedgerState): LedgerCall[] {
  return [...state.calls.values()]
    .filter((call) => call.claimOrder !== undefined)
    .sort((a, b) => (a.claimOrder ?? 0) - (b.claimOrder ?? 0));
}

function requireBatch(state: LedgerState, batchId: string): LedgerBatch {
  const batch = state.batches.get(batchId);
  if (batch === undefined) throw new SidecarError("internal", `unknown ledger batch ${batchId}`);
  return batch;
}

function requireCall(state: LedgerState, callId: string): LedgerCall {
  const call = state.calls.get(callId);
  if (call === undefined) throw new SidecarError("internal", `unknown ledger call ${callId}`);
  return call;
}

function closedText(state: LedgerState): string {
  return `episode admission is closed${state.closedReason === undefined ? "" : ` (${state.closedReason})`}`;
}

function safeCanonical(args: unknown): string {
  try {
    return canonicalArguments(args);
  } catch {
    return "<not JSON>";
  }
}

function assertNever(value: never): never {
  throw new SidecarError("internal", `unexpected ledger value ${JSON.stringify(value)}`);
}
