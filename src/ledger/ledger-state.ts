/**
 * The delivered-call ledger of one episode as a pure state machine: no I/O, no
 * timers. It decides which MCP callback may run which tool call the model really
 * delivered, so robot work runs only when the model asked for it, and at most once.
 *
 * Event-sourced: every decision function validates, produces journal events and
 * folds them with `applyLedgerEvent`, the one place state changes. A restarted
 * sidecar folds its journal the same way (`replayJournal`), so the replayed state
 * is the live state by construction, then marks it interrupted: admission closed
 * for good, claimed calls without an outcome reported as uncertain. Matching a
 * callback to a delivered call is its own module (`match-callback.ts`).
 *
 * Each state is a value built from persistent maps (`persistent-map.ts`): an event
 * shares all but a few paths with the state before it, so it costs the same in a
 * call's first turn and after 20,000 calls, and the state before an event whose journal
 * write failed is still whole. Matching needs no scan either: `matchGroups` indexes the
 * calls by tool and canonical arguments, newest first, and counts those still open.
 * The summary (the episode's status, written several times a second) reads counts and
 * indexes kept with each event (`statusCounts`, `claimOrder`), not every call, and lists
 * only the most recent claims by id, so its cost does not grow with the episode.
 * See docs/design.md §5.
 */
import { SidecarError } from "../lib/errors.ts";
import { argumentsSha256, canonicalArguments } from "./canonical-arguments.ts";
import type { ApprovalDecider, LedgerBatchInput, LedgerEventBody, StopReason } from "./events.ts";
import { PersistentMap } from "./persistent-map.ts";

/**
 * pending → delivered | revoked; delivered → claimed | skipped;
 * claimed → submitted → acknowledged → completed (receipt) | failed.
 * A tool's policy (tool-policy.ts) may hold a claimed call first:
 * claimed → rate_limited (never runs); claimed → awaiting_approval → approved
 * (then on as a claimed call: submitted …) | rejected (never runs).
 */
export type CallStatus =
  | "pending"
  | "delivered"
  | "revoked"
  | "skipped"
  | "claimed"
  | "awaiting_approval"
  | "approved"
  | "rejected"
  | "rate_limited"
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
  "awaiting_approval",
  "approved",
  "rejected",
  "rate_limited",
  "submitted",
  "acknowledged",
  "completed",
  "failed",
];

/**
 * Claimed and not yet finished: work the executor may be doing. A call awaiting
 * approval is not among them: nothing of it can have reached the executor.
 */
export const runningStatuses: readonly CallStatus[] = ["claimed", "approved", "submitted", "acknowledged"];
/** Claimed calls that may go to the executor once their batch order allows. */
const runnableStatuses: readonly CallStatus[] = ["claimed", "approved"];
/** A predecessor in these states no longer holds back the next call of its batch. */
const releasingStatuses: readonly CallStatus[] = [
  "acknowledged",
  "completed",
  "failed",
  "skipped",
  "revoked",
  "rejected",
  "rate_limited",
];

export interface LedgerCall {
  readonly id: string;
  readonly batchId: string;
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
  /** Why the call was skipped, failed, rejected or rate limited. */
  readonly reason?: string;
  /** Set once the call's policy asked for approval. */
  readonly approval?: CallApproval;
}

export interface CallApproval {
  /** SHA-256 of the canonical arguments: a decision must name the same. */
  readonly argsSha256: string;
  readonly rule: string;
  readonly expiresAt: number;
  /** Who decided, once someone (or the sidecar) did. */
  readonly by?: ApprovalDecider;
}

/** An operator's answer to a call awaiting approval. */
export interface ApprovalDecision {
  readonly decision: "approve" | "reject";
  readonly by: "ui" | "api";
  /** Required wording for a rejection, shown to the model. */
  readonly reason?: string;
  /** When given, must be the SHA-256 of the call's canonical arguments. */
  readonly argsSha256?: string;
}

export interface LedgerBatch {
  readonly batchId: string;
  readonly status: "pending" | "delivered" | "revoked";
  readonly callIds: readonly string[];
}

export interface LedgerState {
  /**
   * The manifest's finish tool: its success ends the episode's robot work, so a later
   * call of its batch waits for its receipt (not just its acknowledgement) and is
   * refused once the finish was submitted.
   */
  readonly finishTool?: string;
  readonly admission: "open" | "closed";
  readonly closedReason?: string;
  /** Rebuilt from a journal after a restart: nothing from before may run. */
  readonly interrupted: boolean;
  /** Batch ids by registration (= delivery) position, 0 to `batches.size - 1`. */
  readonly batchOrder: PersistentMap<number, string>;
  readonly batches: PersistentMap<string, LedgerBatch>;
  readonly calls: PersistentMap<string, LedgerCall>;
  /** The calls of each tool and canonical arguments (`matchKey`), for a callback without a call id. */
  readonly matchGroups: PersistentMap<string, MatchGroup>;
  readonly claims: number;
  /** Claimed call ids by claim order, 1 to `claims`. */
  readonly claimOrder: PersistentMap<number, string>;
  /** How many calls are in each status. */
  readonly statusCounts: Readonly<Record<CallStatus, number>>;
  readonly refusedCallbacks: number;
}

/** The calls sharing one tool and canonical arguments. */
export interface MatchGroup {
  /** Every such call, the newest registration first (a batch's calls last position first). */
  readonly newest: CallIdList | undefined;
  /** How many are pending or delivered: could still be claimed. */
  readonly open: number;
  /** How many were revoked or skipped. */
  readonly unavailable: number;
  readonly total: number;
}

export interface CallIdList {
  readonly id: string;
  readonly older: CallIdList | undefined;
}

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
  /**
   * The most recent claimed calls (at most `summaryClaimedLimit`), in claim order: the status
   * is rewritten several times a second, so what it carries must not grow with the episode.
   * Every claim is in the episode's ledger journal (ledger.jsonl).
   */
  readonly claimed: readonly string[];
  /** How many calls were ever claimed. */
  readonly claimedTotal: number;
  /** Claimed calls without a receipt or failure, in claim order. */
  readonly unfinished: readonly string[];
  /** After a restart: the unfinished calls, which may or may not have run. */
  readonly uncertain: readonly string[];
  /** Calls waiting for an operator's decision. */
  readonly awaitingApproval: readonly string[];
  readonly refusedCallbacks: number;
}

export function createLedgerState(options: { finishTool?: string } = {}): LedgerState {
  return {
    ...(options.finishTool === undefined ? {} : { finishTool: options.finishTool }),
    admission: "open",
    interrupted: false,
    batchOrder: PersistentMap.empty(),
    batches: PersistentMap.empty(),
    calls: PersistentMap.empty(),
    matchGroups: PersistentMap.empty(),
    claims: 0,
    claimOrder: PersistentMap.empty(),
    statusCounts: Object.fromEntries(callStatuses.map((status) => [status, 0])) as Record<CallStatus, number>,
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
 * Whether claimed call `callId` may go to the executor: every earlier call of its
 * batch must be acknowledged, finished, skipped or revoked (an earlier finish call:
 * finished, since its receipt decides whether any robot work may follow). Keeps
 * executor order = batch order even when a client sends a batch's calls concurrently.
 */
export function checkBatchOrder(state: LedgerState, callId: string): BatchOrderGate {
  const call = requireCall(state, callId);
  const batch = requireBatch(state, call.batchId);
  const unclaimed: string[] = [];
  const running: string[] = [];
  for (const earlierId of batch.callIds.slice(0, call.index)) {
    const earlier = requireCall(state, earlierId);
    const holdsUntilDone = earlier.tool === state.finishTool && earlier.status === "acknowledged";
    if (releasingStatuses.includes(earlier.status) && !holdsUntilDone) continue;
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

/**
 * A claimed call's policy asks a person first: it waits in `awaiting_approval`
 * until `decideApproval` (or the expiry, a close, a restart) settles it.
 */
export function requestApproval(
  state: LedgerState,
  callId: string,
  request: { rule: string; expiresAt: number },
): Transition {
  const call = requireCall(state, callId);
  if (call.status !== "claimed") {
    throw new SidecarError("internal", `call ${callId} cannot await approval in state ${call.status}`);
  }
  // A closed ledger rejects what awaits approval (closeAdmission): nothing may start waiting after.
  if (state.admission === "closed") {
    throw new SidecarError("episode_closed", `call ${callId} cannot await approval: ${closedText(state)}`);
  }
  return transition(state, [
    {
      type: "approval_requested",
      callId,
      argsSha256: argumentsSha256(call.canonicalArgs),
      rule: request.rule,
      expiresAt: request.expiresAt,
    },
  ]);
}

/**
 * An operator's decision on a call awaiting approval, bound to the call id and to
 * the SHA-256 of its canonical arguments. A call not awaiting approval (decided
 * already, expired, never asked) or a digest of other arguments is a conflict.
 */
export function decideApproval(state: LedgerState, callId: string, decision: ApprovalDecision): Transition {
  const call = state.calls.get(callId);
  if (call === undefined) {
    throw new SidecarError("not_found", `no call ${JSON.stringify(callId)} in this episode`);
  }
  const approval = call.approval;
  if (call.status !== "awaiting_approval" || approval === undefined) {
    const decided =
      call.status === "rejected" && approval?.by !== undefined
        ? `was already rejected (${approval.by}: ${call.reason ?? ""})`
        : approval?.by !== undefined
          ? `was already approved (${approval.by})`
          : `is not awaiting approval (it is ${call.status})`;
    throw new SidecarError(
      "conflict",
      `call ${JSON.stringify(callId)} ${decided}; the decision changes nothing`,
    );
  }
  if (decision.argsSha256 !== undefined && decision.argsSha256 !== approval.argsSha256) {
    throw new SidecarError(
      "conflict",
      `the decision names arguments with SHA-256 ${decision.argsSha256}, but call ${JSON.stringify(callId)}'s arguments have ${approval.argsSha256}; refused`,
      { param: "args_sha256" },
    );
  }
  const { argsSha256 } = approval;
  return decision.decision === "approve"
    ? transition(state, [{ type: "approved", callId, argsSha256, by: decision.by }])
    : transition(state, [
        {
          type: "rejected",
          callId,
          argsSha256,
          by: decision.by,
          reason: decision.reason ?? "no reason given",
        },
      ]);
}

/** Nobody decided in time (`by: timeout`), or the sidecar settles the call (`closed`, `restart`, `client`): it never runs. */
export function expireApproval(
  state: LedgerState,
  callId: string,
  by: "timeout" | "closed" | "restart" | "client",
  reason: string,
): Transition {
  const call = requireCall(state, callId);
  if (call.status !== "awaiting_approval" || call.approval === undefined) return { state, events: [] };
  return transition(state, [{ type: "rejected", callId, argsSha256: call.approval.argsSha256, by, reason }]);
}

/** A claimed call over its tool's rate limit: it never runs. */
export function limitRate(
  state: LedgerState,
  callId: string,
  problem: { limit: "per_minute" | "min_interval_ms"; reason: string },
): Transition {
  const call = requireCall(state, callId);
  if (call.status !== "claimed") {
    throw new SidecarError("internal", `call ${callId} cannot be rate limited in state ${call.status}`);
  }
  return transition(state, [{ type: "rate_limited", callId, limit: problem.limit, reason: problem.reason }]);
}

/** Calls the executor acknowledged and has not finished: the jobs a stop can name. */
export function jobsInFlight(state: LedgerState): { callId: string; jobId: string }[] {
  return claimedWhere(state, ["acknowledged"]).flatMap((call) =>
    call.jobId !== undefined ? [{ callId: call.id, jobId: call.jobId }] : [],
  );
}

/** Journals a stop asked of the executor for an acknowledged call (no state change: its receipt still ends it). */
export function requestStop(state: LedgerState, callId: string, reason: StopReason): Transition {
  const call = requireCall(state, callId);
  if (call.jobId === undefined) throw new SidecarError("internal", `call ${callId} has no job to stop`);
  return transition(state, [{ type: "stop_requested", callId, jobId: call.jobId, reason }]);
}

/** Journals the executor's answer to a stop. */
export function answerStop(
  state: LedgerState,
  callId: string,
  reason: StopReason,
  answer: { status: number | null; stopped: boolean; detail: string },
): Transition {
  const call = requireCall(state, callId);
  if (call.jobId === undefined) throw new SidecarError("internal", `call ${callId} has no job to stop`);
  return transition(state, [{ type: "stop_answered", callId, jobId: call.jobId, reason, ...answer }]);
}

/** Calls awaiting an operator's decision, in delivery order. */
export function callsAwaitingApproval(state: LedgerState): LedgerCall[] {
  return callsInDeliveryOrder(state).filter((call) => call.status === "awaiting_approval");
}

/** Executor progress of a claimed call. Out-of-order steps are bugs and throw. */
export function recordExecution(state: LedgerState, callId: string, step: ExecutionStep): Transition {
  const call = requireCall(state, callId);
  const allowed: Record<ExecutionStep["type"], readonly CallStatus[]> = {
    submitted: runnableStatuses,
    acknowledged: ["submitted"],
    receipt: ["submitted", "acknowledged"],
    failed: [...runnableStatuses, "submitted", "acknowledged"],
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

/**
 * No callback is admitted after this (cancel, finish, shutdown), and calls awaiting
 * approval are rejected: none of them runs. Idempotent.
 */
export function closeAdmission(state: LedgerState, reason: string): Transition {
  if (state.admission === "closed") return { state, events: [] };
  const closed = transition(state, [{ type: "admission_closed", reason }]);
  return then(
    closed,
    rejectAwaiting(closed.state, "closed", `admission closed before a decision (${reason})`),
  );
}

/**
 * A restarted sidecar's view of the state it found: calls that awaited approval
 * rejected (never runnable), closed for good, unfinished calls uncertain.
 */
export function interruptLedger(state: LedgerState): Transition {
  const rejected = rejectAwaiting(
    state,
    "restart",
    "the sidecar restarted while the call awaited approval; it was never run",
  );
  return then(
    rejected,
    transition(rejected.state, [{ type: "interrupted", uncertain: unfinishedCalls(state) }]),
  );
}

function rejectAwaiting(state: LedgerState, by: "closed" | "restart", reason: string): Transition {
  return callsAwaitingApproval(state).reduce<Transition>(
    (done, call) => then(done, expireApproval(done.state, call.id, by, reason)),
    { state, events: [] },
  );
}

/** Two transitions one after the other. */
function then(first: Transition, second: Transition): Transition {
  return { state: second.state, events: [...first.events, ...second.events] };
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

/** How many of the most recent claimed calls the summary lists by id. */
export const summaryClaimedLimit = 100;

export function summarizeLedger(state: LedgerState): LedgerSummary {
  const unfinished = unfinishedCalls(state);
  return {
    admission: state.admission,
    interrupted: state.interrupted,
    batches: state.batches.size,
    calls: state.calls.size,
    counts: { ...state.statusCounts },
    claimed: recentClaimedIds(state, summaryClaimedLimit),
    claimedTotal: state.claims,
    unfinished,
    uncertain: state.interrupted ? unfinished : [],
    awaitingApproval:
      state.statusCounts.awaiting_approval === 0 ? [] : callsAwaitingApproval(state).map((call) => call.id),
    refusedCallbacks: state.refusedCallbacks,
  };
}

/** Claimed calls without receipt or failure, in claim order. */
export function unfinishedCalls(state: LedgerState): string[] {
  return claimedWhere(state, runningStatuses).map((call) => call.id);
}

/** Every call in delivery order: batch order, then position in the batch. */
export function callsInDeliveryOrder(state: LedgerState): LedgerCall[] {
  const calls: LedgerCall[] = [];
  for (let position = 0; position < state.batches.size; position++) {
    const batchId = state.batchOrder.get(position) ?? "";
    for (const callId of requireBatch(state, batchId).callIds) calls.push(requireCall(state, callId));
  }
  return calls;
}

/** The `matchGroups` key of a tool and its canonical arguments. */
export function matchKey(tool: string, canonicalArgs: string): string {
  return `${tool}\u0000${canonicalArgs}`;
}

/** The single place state changes; used live and for replay. */
export function applyLedgerEvent(state: LedgerState, event: LedgerEventBody): LedgerState {
  switch (event.type) {
    case "registered": {
      const batch: LedgerBatch = {
        batchId: event.batchId,
        status: "pending",
        callIds: event.calls.map((call) => call.id),
      };
      const next = {
        ...state,
        batchOrder: state.batchOrder.set(state.batches.size, event.batchId),
        batches: state.batches.set(event.batchId, batch),
      };
      return updateCalls(
        next,
        event.calls.map((call, index) => ({
          ...call,
          batchId: event.batchId,
          index,
          canonicalArgs: canonicalArguments(call.args),
          status: "pending",
        })),
      );
    }
    case "delivered":
    case "revoked": {
      const status = event.type;
      const batch = requireBatch(state, event.batchId);
      const next = { ...state, batches: state.batches.set(batch.batchId, { ...batch, status }) };
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
    case "approval_requested":
      return updateCalls(state, [
        {
          ...requireCall(state, event.callId),
          status: "awaiting_approval",
          approval: { argsSha256: event.argsSha256, rule: event.rule, expiresAt: event.expiresAt },
        },
      ]);
    case "approved":
    case "rejected": {
      const call = requireCall(state, event.callId);
      if (call.approval === undefined)
        throw new SidecarError("internal", `call ${call.id} never awaited approval`);
      const approval = { ...call.approval, by: event.by };
      return updateCalls(state, [
        event.type === "approved"
          ? { ...call, status: "approved", approval }
          : { ...call, status: "rejected", approval, reason: event.reason },
      ]);
    }
    case "stop_requested":
    case "stop_answered":
      requireCall(state, event.callId);
      return state;
    case "rate_limited":
      return updateCalls(state, [
        { ...requireCall(state, event.callId), status: "rate_limited", reason: event.reason },
      ]);
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

/** Folds a decision's events into the state (the decision modules' one way to change it). */
export function transition(state: LedgerState, events: LedgerEventBody[]): Transition {
  return { state: events.reduce(applyLedgerEvent, state), events };
}

/** New or changed calls, with their match groups, status counts and claim order kept in step. */
function updateCalls(state: LedgerState, updated: readonly LedgerCall[]): LedgerState {
  let { calls, matchGroups, claimOrder } = state;
  const statusCounts = { ...state.statusCounts };
  for (const call of updated) {
    const before = calls.get(call.id);
    calls = calls.set(call.id, call);
    if (before !== undefined) statusCounts[before.status] -= 1;
    statusCounts[call.status] += 1;
    if (call.claimOrder !== undefined && before?.claimOrder === undefined)
      claimOrder = claimOrder.set(call.claimOrder, call.id);
    const opens = Number(isOpen(call)) - Number(before !== undefined && isOpen(before));
    const unavailable = Number(isUnavailable(call)) - Number(before !== undefined && isUnavailable(before));
    if (before !== undefined && opens === 0 && unavailable === 0) continue;
    const key = matchKey(call.tool, call.canonicalArgs);
    const group = matchGroups.get(key) ?? { newest: undefined, open: 0, unavailable: 0, total: 0 };
    matchGroups = matchGroups.set(key, {
      newest: before === undefined ? { id: call.id, older: group.newest } : group.newest,
      open: group.open + opens,
      unavailable: group.unavailable + unavailable,
      total: group.total + (before === undefined ? 1 : 0),
    });
  }
  return { ...state, calls, matchGroups, claimOrder, statusCounts };
}

function isOpen(call: LedgerCall): boolean {
  return call.status === "pending" || call.status === "delivered";
}

function isUnavailable(call: LedgerCall): boolean {
  return call.status === "revoked" || call.status === "skipped";
}

/** The ids of the `limit` most recent claims, in claim order (`claimOrder` runs 1 to `claims`). */
function recentClaimedIds(state: LedgerState, limit: number): string[] {
  const ids: string[] = [];
  for (let order = Math.max(1, state.claims - limit + 1); order <= state.claims; order++)
    ids.push(state.claimOrder.get(order) ?? "");
  return ids;
}

/**
 * The claimed calls in one of `statuses`, in claim order. Walks back from the newest claim
 * only until the counts kept with each event say all of them were found: calls end soon
 * after their claim, so this visits the recent claims, not the episode's every one.
 */
function claimedWhere(state: LedgerState, statuses: readonly CallStatus[]): LedgerCall[] {
  let wanted = 0;
  for (const status of statuses) wanted += state.statusCounts[status];
  const found: LedgerCall[] = [];
  for (let order = state.claims; order >= 1 && found.length < wanted; order--) {
    const call = requireCall(state, state.claimOrder.get(order) ?? "");
    if (statuses.includes(call.status)) found.push(call);
  }
  return found.reverse();
}

function requireBatch(state: LedgerState, batchId: string): LedgerBatch {
  const batch = state.batches.get(batchId);
  if (batch === undefined) throw new SidecarError("internal", `unknown ledger batch ${batchId}`);
  return batch;
}

export function requireCall(state: LedgerState, callId: string): LedgerCall {
  const call = state.calls.get(callId);
  if (call === undefined) throw new SidecarError("internal", `unknown ledger call ${callId}`);
  return call;
}

/** Why admission is closed, for refusals. */
export function closedText(state: LedgerState): string {
  return `episode admission is closed${state.closedReason === undefined ? "" : ` (${state.closedReason})`}`;
}

export function assertNever(value: never): never {
  throw new SidecarError("internal", `unexpected ledger value ${JSON.stringify(value)}`);
}
