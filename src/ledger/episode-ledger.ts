/**
 * The episode's ledger as the rest of the sidecar uses it: the pure state
 * machine (`ledger-state.ts`) plus the bounded waits a real client needs, and a
 * journal written before anything may reach the executor.
 *
 * Waits (both bounded, both end in a clear refusal):
 * - Delivery: clients start a call before the sidecar has finished writing the
 *   response (docs/clients.md). A callback whose only match is still `pending` waits
 *   up to `deliveryWaitMs` for the batch to be delivered or revoked.
 * - Batch order: a claimed call waits until every earlier call of its batch is
 *   acknowledged or finished. After `previousAckWaitMs`, earlier calls nobody
 *   claimed are skipped (never claimable again, so executor order still follows
 *   batch order) and the call goes ahead; if an earlier call is still running
 *   unacknowledged, the call is refused and recorded as failed — it never
 *   reached the executor.
 * - Policy (tool-policy.ts, after the claim and the caller's precheck, e.g. the input
 *   schema, before the batch order): a call over
 *   its tool's rate limit is rate limited and refused; a call whose tool asks for
 *   approval waits up to `approvalTimeoutMs` for `decide` (an operator's decision,
 *   bound to the call id and its arguments' SHA-256); a rejection or no decision
 *   refuses it. Neither reaches the executor.
 *
 * Journal: every event goes to `journal.append` (synchronous; the caller flushes)
 * before the state changes and before `admit` resolves or an `Admission` step
 * returns, and `admit` resolves only after `journal.sync` made the claim durable.
 * If the journal throws, the ledger stops admitting anything, also a call already
 * claimed and waiting; the live state becomes the events the journal took (a
 * transition's first few, when it failed partway) folded onto the state before,
 * so it is what a restart rebuilds. If the sync fails, that call fails without
 * reaching the executor.
 * See docs/design.md §5.
 */

import { errorMessage } from "../lib/error-message.ts";
import { SidecarError } from "../lib/errors.ts";
import type { LedgerBatchInput, LedgerEvent, LedgerEventBody, StopReason } from "./events.ts";
import {
  type ApprovalDecision,
  answerStop,
  applyLedgerEvent,
  callsAwaitingApproval,
  checkBatchOrder,
  closeAdmission,
  createLedgerState,
  decideApproval,
  expireApproval,
  foldJournal,
  interruptLedger,
  jobsInFlight,
  type LedgerCall,
  type LedgerState,
  type LedgerSummary,
  limitRate,
  markDelivered,
  recordExecution,
  registerBatch,
  requestApproval,
  requestStop,
  revokeBatch,
  skipUnclaimedPredecessors,
  summarizeLedger,
  type Transition,
  unfinishedCalls,
} from "./ledger-state.ts";
import { type LedgerCallback, matchCallback, refuseCallback } from "./match-callback.ts";
import { checkRate, keepRecentTimes, noToolPolicy, type ToolPolicy } from "./tool-policy.ts";

export interface LedgerJournal {
  append(event: LedgerEvent): void;
  /**
   * Resolves once every appended event is on stable storage (fdatasync): a claim
   * must survive a power cut before its call may reach the executor.
   */
  sync?(): Promise<void>;
}

export interface EpisodeLedgerOptions {
  journal: LedgerJournal;
  /** Milliseconds since the epoch, stamped on each event. */
  clock?: () => number;
  /** How long a callback waits for a pending batch's delivery outcome. */
  deliveryWaitMs: number;
  /** How long a claimed call waits for the earlier calls of its batch. */
  previousAckWaitMs: number;
  /** The manifest's finish tool: later calls of its batch wait for its receipt (ledger-state.ts). */
  finishTool?: string;
  /** Approval and rate limits of the manifest's tools (default: none). */
  policy?: ToolPolicy;
  /** How long a call waits for an operator's decision before it is rejected (config approval_timeout_ms). */
  approvalTimeoutMs?: number;
}

/** The executor's answer to a stop as the journal keeps it. */
export type StopAnswerRecord = { status: number | null; stopped: boolean; detail: string };

/** Default of approval_timeout_ms. */
export const defaultApprovalTimeoutMs = 300_000;

export type AdmitHooks = {
  /**
   * Why the claimed call must not run at all (e.g. its arguments fail the tool's input
   * schema), checked before any rate limit or approval: the call fails at once, so no
   * operator is ever asked about a call that could not run anyway.
   */
  precheck?: (call: LedgerCall) => string | undefined;
  onApprovalRequested?: () => void;
  withdrawn?: AbortSignal;
};

/** A call waiting for an operator's decision. */
export interface PendingApproval {
  readonly call: LedgerCall;
  /** Milliseconds since the epoch. */
  readonly requestedAt: number;
  readonly expiresAt: number;
}

/** A claimed call that may go to the executor; report its progress through these. */
export interface Admission {
  readonly call: LedgerCall;
  /** Call just before sending the job to the executor. */
  submitted(): void;
  acknowledged(jobId: string): void;
  receipt(result: unknown): void;
  failed(reason: string): void;
}

export interface EpisodeLedger {
  /** Before sending a response with tool calls. Throws on duplicate ids or closed admission. */
  register(batch: LedgerBatchInput): void;
  /** The response was fully written to the client. */
  delivered(batchId: string): void;
  /** Writing the response failed. */
  revoke(batchId: string, reason?: string): void;
  /**
   * Resolves when the callback may run; rejects with a SidecarError whose message says
   * why not. `onApprovalRequested` is told when the call starts waiting for an operator;
   * `withdrawn` aborts when the client no longer waits for the call: a call still awaiting
   * approval is then rejected (`by: client`), since no answer could reach the model.
   */
  admit(callback: LedgerCallback, hooks?: AdmitHooks): Promise<Admission>;
  /** An operator's decision on a call awaiting approval; throws `conflict` when it changes nothing. */
  decide(callId: string, decision: ApprovalDecision): LedgerCall;
  /** Calls waiting for an operator's decision, in delivery order. */
  pendingApprovals(): PendingApproval[];
  /** Acknowledged calls without a receipt or failure: the jobs a stop can name. */
  jobsInFlight(): { callId: string; jobId: string }[];
  /** Journals a stop about to be asked of the executor (before the request), then its answer. */
  stopRequested(callId: string, reason: StopReason): void;
  stopAnswered(callId: string, reason: StopReason, answer: StopAnswerRecord): void;
  /** Refuse every later callback; calls still waiting for their batch order fail without running. */
  close(reason?: string): void;
  /** Close, then wait until admitted calls finish (or `timeoutMs` passes); lists those that did not. */
  drain(options?: { timeoutMs?: number }): Promise<{ unfinished: string[] }>;
  summary(): LedgerSummary;
  state(): LedgerState;
}

export function createEpisodeLedger(options: EpisodeLedgerOptions): EpisodeLedger {
  return openLedger(createLedgerState({ finishTool: options.finishTool }), options);
}

/**
 * The ledger of an episode that was running when the sidecar stopped: rebuilt
 * from its journal, marked interrupted (an `interrupted` event is appended),
 * admission closed for good.
 */
export function restoreEpisodeLedger(
  events: readonly LedgerEventBody[],
  options: EpisodeLedgerOptions,
): EpisodeLedger {
  const state = foldJournal(events);
  const ledger = openLedger(state, options);
  ledger.commit(interruptLedger(state));
  return ledger;
}

function openLedger(
  initial: LedgerState,
  options: EpisodeLedgerOptions,
): EpisodeLedger & {
  commit(next: Transition): void;
} {
  const clock = options.clock ?? Date.now;
  const policy = options.policy ?? noToolPolicy;
  const approvalTimeoutMs = options.approvalTimeoutMs ?? defaultApprovalTimeoutMs;
  /** Per tool, when its recent calls passed the rate check (ascending). */
  const rateTimes = new Map<string, number[]>();
  let state = initial;
  let broken: SidecarError | undefined;
  let listeners: Array<() => void> = [];
  /** Claimed calls waiting for their batch order. */
  const gated = new Set<string>();

  function commit(next: Transition): void {
    if (broken !== undefined) throw broken;
    let appended = 0;
    try {
      for (const event of next.events) {
        options.journal.append({ ...event, at: clock() } as LedgerEvent);
        appended++;
      }
    } catch (error) {
      broken = new SidecarError(
        "internal",
        `the ledger journal failed (${(error as Error)?.message ?? String(error)}); no further tool calls are admitted`,
        { cause: error },
      );
      // The events the journal took before it failed are what a restart will fold: show them.
      const journaled = next.events.slice(0, appended).reduce(applyLedgerEvent, state);
      state = closeAdmission(journaled, "the ledger journal failed").state;
      notify();
      throw broken;
    }
    state = next.state;
    if (next.events.length > 0) notify();
  }

  function notify(): void {
    const waiting = listeners;
    listeners = [];
    for (const wake of waiting) wake();
  }

  /** Resolves on the next state change, or with false when the deadline passed. */
  function nextChange(deadline: Deadline): Promise<boolean> {
    return Promise.race([
      new Promise<boolean>((resolve) => listeners.push(() => resolve(true))),
      deadline.passed,
    ]);
  }

  async function admit(callback: LedgerCallback, hooks: AdmitHooks = {}): Promise<Admission> {
    const call = await claim(callback);
    gated.add(call.id);
    let deadline: Deadline | undefined;
    let durable = false;
    try {
      await holdByPolicy(call, hooks);
      deadline = startDeadline(options.previousAckWaitMs);
      for (let timedOut = false; ; ) {
        // A broken journal admits nothing, also a call its last journaled events released.
        if (broken !== undefined) throw broken;
        const current = state.calls.get(call.id);
        if (current?.status !== "claimed" && current?.status !== "approved") {
          throw new SidecarError("episode_closed", current?.reason ?? `call ${call.id} can no longer run`);
        }
        if (checkBatchOrder(state, call.id).kind === "ready") {
          if (durable) return admission(current);
          await makeDurable(call.id);
          durable = true;
          continue; // the state may have moved (closed) while the journal synced
        }
        if (timedOut) {
          commit(
            skipUnclaimedPredecessors(
              state,
              call.id,
              `call ${JSON.stringify(call.id)} of the same batch went ahead without it`,
            ),
          );
          const gate = checkBatchOrder(state, call.id);
          if (gate.kind === "ready") continue;
          const reason = `call ${JSON.stringify(call.id)} refused: the earlier call(s) ${gate.running.join(", ")} of its batch were not acknowledged by the executor within ${options.previousAckWaitMs} ms`;
          commit(recordExecution(state, call.id, { type: "failed", reason }));
          throw new SidecarError("unavailable", reason);
        }
        timedOut = !(await nextChange(deadline));
      }
    } finally {
      gated.delete(call.id);
      deadline?.cancel();
    }
  }

  /** The tool's rate limit, then its approval: resolves when the call may go on, throws when it never runs. */
  async function holdByPolicy(call: LedgerCall, hooks: AdmitHooks): Promise<void> {
    const stillClaimed = () => {
      if (broken !== undefined) throw broken;
      const current = state.calls.get(call.id);
      if (current?.status !== "claimed")
        throw new SidecarError("episode_closed", current?.reason ?? `call ${call.id} can no longer run`);
    };
    stillClaimed(); // the episode may have closed between the claim and now
    const problem = hooks.precheck?.(call);
    if (problem !== undefined) {
      commit(recordExecution(state, call.id, { type: "failed", reason: problem }));
      throw new SidecarError("invalid_request", problem);
    }
    const limit = policy.rate(call.tool);
    if (limit !== undefined) {
      const now = clock();
      const times = rateTimes.get(call.tool) ?? [];
      const problem = checkRate(call.tool, limit, times, now);
      if (problem !== undefined) {
        commit(limitRate(state, call.id, problem));
        throw new SidecarError("invalid_request", `${problem.reason}; the call was not run`);
      }
      rateTimes.set(call.tool, [...keepRecentTimes(times, now), now]);
    }
    const rule = policy.approvalRule(call.tool, call.args);
    if (rule === undefined) return;
    commit(requestApproval(state, call.id, { rule, expiresAt: clock() + approvalTimeoutMs }));
    hooks.onApprovalRequested?.();
    const deadline = startDeadline(approvalTimeoutMs);
    const withdrawn = () => {
      if (broken !== undefined || state.calls.get(call.id)?.status !== "awaiting_approval") return;
      commit(expireApproval(state, call.id, "client", "the client withdrew the call before a decision"));
    };
    hooks.withdrawn?.addEventListener("abort", withdrawn, { once: true });
    try {
      if (hooks.withdrawn?.aborted) withdrawn();
      for (;;) {
        if (broken !== undefined) throw broken;
        const current = state.calls.get(call.id);
        if (current?.status === "approved") return;
        if (current?.status !== "awaiting_approval") {
          const by = current?.approval?.by;
          const why = current?.reason ?? "no decision";
          const nobody = by === "closed" || by === "restart" || by === "client";
          throw new SidecarError(
            nobody ? "episode_closed" : "invalid_request",
            nobody ? `not run: ${why}` : `rejected by the operator: ${why}`,
          );
        }
        if (!(await nextChange(deadline)))
          commit(expireApproval(state, call.id, "timeout", `no decision within ${approvalTimeoutMs} ms`));
      }
    } finally {
      hooks.withdrawn?.removeEventListener("abort", withdrawn);
      deadline.cancel();
    }
  }

  function decide(callId: string, decision: ApprovalDecision): LedgerCall {
    commit(decideApproval(state, callId, decision));
    const call = state.calls.get(callId);
    if (call === undefined) throw new SidecarError("internal", `call ${callId} vanished`);
    return call;
  }

  function pendingApprovals(): PendingApproval[] {
    return callsAwaitingApproval(state).map((call) => {
      const expiresAt = call.approval?.expiresAt ?? 0;
      return { call, expiresAt, requestedAt: expiresAt - approvalTimeoutMs };
    });
  }

  /** The claim (and everything journaled before it) on stable storage, or the call fails unrun. */
  async function makeDurable(callId: string): Promise<void> {
    try {
      await options.journal.sync?.();
    } catch (error) {
      const reason = `call ${JSON.stringify(callId)} refused: its claim could not be made durable (${errorMessage(error)}); it never reached the executor`;
      try {
        if (state.calls.get(callId)?.status === "claimed")
          commit(recordExecution(state, callId, { type: "failed", reason }));
      } catch {
        // The journal is failing as a whole: the ledger is broken and admits nothing more.
      }
      throw new SidecarError("unavailable", reason);
    }
  }

  async function claim(callback: LedgerCallback): Promise<LedgerCall> {
    const deadline = startDeadline(options.deliveryWaitMs);
    try {
      for (;;) {
        if (broken !== undefined) throw broken;
        const result = matchCallback(state, callback);
        const outcome = result.outcome;
        if (outcome.kind === "wait") {
          if (await nextChange(deadline)) continue;
          const reason = `the delivery of batch ${outcome.batchId} did not complete within ${options.deliveryWaitMs} ms`;
          commit(refuseCallback(state, callback, "delivery_timeout", reason));
          throw new SidecarError("unavailable", `tool call refused: ${reason}`);
        }
        commit(result);
        if (outcome.kind === "admitted") return outcome.call;
        const kind = outcome.code === "admission_closed" ? "episode_closed" : "invalid_request";
        throw new SidecarError(kind, `tool call refused: ${outcome.reason}`);
      }
    } finally {
      deadline.cancel();
    }
  }

  function admission(call: LedgerCall): Admission {
    const step = (s: Parameters<typeof recordExecution>[2]) => commit(recordExecution(state, call.id, s));
    return {
      call,
      submitted: () => step({ type: "submitted" }),
      acknowledged: (jobId) => step({ type: "acknowledged", jobId }),
      receipt: (result) => step({ type: "receipt", result }),
      failed: (reason) => step({ type: "failed", reason }),
    };
  }

  function close(reason = "episode admission closed"): void {
    if (broken !== undefined) return;
    commit(closeAdmission(state, reason));
    for (const callId of gated) {
      const status = state.calls.get(callId)?.status;
      if (status !== "claimed" && status !== "approved") continue;
      commit(
        recordExecution(state, callId, {
          type: "failed",
          reason: `admission closed before the call started (${reason})`,
        }),
      );
    }
  }

  async function drain(drainOptions: { timeoutMs?: number } = {}): Promise<{ unfinished: string[] }> {
    close("draining");
    const deadline = startDeadline(drainOptions.timeoutMs);
    try {
      for (;;) {
        const unfinished = unfinishedCalls(state);
        if (unfinished.length === 0 || !(await nextChange(deadline)))
          return { unfinished: unfinishedCalls(state) };
      }
    } finally {
      deadline.cancel();
    }
  }

  return {
    register: (batch) => commit(registerBatch(state, batch)),
    delivered: (batchId) => commit(markDelivered(state, batchId)),
    revoke: (batchId, reason) => commit(revokeBatch(state, batchId, reason)),
    admit,
    decide,
    pendingApprovals,
    jobsInFlight: () => jobsInFlight(state),
    stopRequested: (callId, reason) => commit(requestStop(state, callId, reason)),
    stopAnswered: (callId, reason, answer) => commit(answerStop(state, callId, reason, answer)),
    close,
    drain,
    summary: () => summarizeLedger(state),
    state: () => state,
    commit,
  };
}

interface Deadline {
  /** Resolves with false when the time is up (never, without a limit). */
  readonly passed: Promise<false>;
  cancel(): void;
}

function startDeadline(ms: number | undefined): Deadline {
  if (ms === undefined) return { passed: new Promise<false>(() => {}), cancel: () => {} };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const passed = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return { passed, cancel: () => clearTimeout(timer) };
}
