/**
 * Callback matching over the ledger state (pure): which delivered call, if any, an
 * MCP tool callback may run. The strongest identity the client offers wins — a
 * call id (`_meta` or the private `_callID` argument) names one call; without it,
 * the first unclaimed call of the same tool and canonical arguments in the newest
 * batch that has one (an older batch's unrun call never jumps the newest answer's
 * batch order). A call whose delivery is still being written makes the callback wait;
 * everything else that does not match is a recorded refusal.
 * See docs/design.md §5 and `ledger-state.ts` for the state machine itself.
 */

import { errorMessage } from "../lib/error-message.ts";
import { canonicalArguments } from "./canonical-arguments.ts";
import type { RefusalCode } from "./events.ts";
import {
  assertNever,
  closedText,
  type LedgerCall,
  type LedgerState,
  matchKey,
  requireCall,
  type Transition,
  transition,
} from "./ledger-state.ts";

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
    const reason = errorMessage(error);
    return { kind: "refused", code: "arguments_differ", reason: `the callback's ${reason}` };
  }
  if (callback.identity !== undefined) return decideById(state, callback.tool, args, callback.identity.value);

  // Newest batch first: a matching call of an older batch the client never ran (an orphan)
  // must not be claimed ahead of the newest answer's call, whose batch order it would skip.
  // Within a batch, delivery order; an older batch's call is taken only when no newer batch
  // has an open or pending match. The group lists its calls newest first, a batch's together.
  const group = state.matchGroups.get(matchKey(callback.tool, args));
  if (group !== undefined && group.open > 0) {
    let batchId: string | undefined;
    let delivered: LedgerCall | undefined;
    for (let node = group.newest; node !== undefined; node = node.older) {
      const call = requireCall(state, node.id);
      if (batchId !== undefined && call.batchId !== batchId) break;
      if (call.status === "delivered") delivered = call;
      if (call.status === "delivered" || call.status === "pending") batchId = call.batchId;
    }
    if (delivered !== undefined) return { kind: "admitted", call: delivered };
    if (batchId !== undefined) return { kind: "wait", batchId };
  }
  const unavailable = group?.unavailable ?? 0;
  const claimed = (group?.total ?? 0) - (group?.open ?? 0) - unavailable;
  return refusedByNameAndArgs(callback.tool, claimed, unavailable);
}

/** No open call of the tool and arguments: how many matching calls were claimed, how many revoked or skipped. */
export function refusedByNameAndArgs(tool: string, claimed: number, unavailable: number): MatchOutcome {
  const also =
    claimed + unavailable === 0
      ? ""
      : ` (${claimed} matching call(s) already claimed, ${unavailable} revoked or skipped)`;
  return {
    kind: "refused",
    code: claimed > 0 ? "already_claimed" : "no_match",
    reason: `no delivered call matches tool ${tool} with these arguments${also}`,
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
    case "awaiting_approval":
    case "approved":
    case "rejected":
    case "rate_limited":
    case "submitted":
    case "acknowledged":
    case "completed":
    case "failed":
      return { kind: "refused", code: "already_claimed", reason: `call ${name} was already claimed` };
    default:
      return assertNever(call.status);
  }
}

function safeCanonical(args: unknown): string {
  try {
    return canonicalArguments(args);
  } catch {
    return "<not JSON>";
  }
}
