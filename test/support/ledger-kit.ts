/**
 * Test kit for the pure ledger: applies transitions in sequence and keeps the
 * journal, as the episode ledger does, plus the calls and callbacks the unit
 * tests build. Used by tests only.
 */

import type { LedgerBatchInput, LedgerEventBody } from "../../src/ledger/events.ts";
import {
  closeAdmission,
  createLedgerState,
  type LedgerState,
  markDelivered,
  recordExecution,
  registerBatch,
  revokeBatch,
  type Transition,
} from "../../src/ledger/ledger-state.ts";
import {
  type LedgerCallback,
  type MatchOutcome,
  matchCallback,
  refuseCallback,
} from "../../src/ledger/match-callback.ts";
import { SidecarError } from "../../src/lib/errors.ts";

export function runLedger() {
  let state = createLedgerState();
  const journal: LedgerEventBody[] = [];
  const step = (next: Transition) => {
    state = next.state;
    journal.push(...next.events);
    return next;
  };
  return {
    get state(): LedgerState {
      return state;
    },
    journal,
    step,
    register: (batch: LedgerBatchInput) => step(registerBatch(state, batch)),
    deliver: (batchId: string) => step(markDelivered(state, batchId)),
    revoke: (batchId: string) => step(revokeBatch(state, batchId)),
    match: (callback: LedgerCallback) => {
      const result = matchCallback(state, callback);
      step(result);
      return result.outcome;
    },
    refuse: (callback: LedgerCallback, reason: string) =>
      step(refuseCallback(state, callback, "no_match", reason)),
    execute: (callId: string, s: Parameters<typeof recordExecution>[2]) =>
      step(recordExecution(state, callId, s)),
    close: (reason: string) => step(closeAdmission(state, reason)),
  };
}

export const record = (id: string, nonce = "n1") => ({
  id,
  modelName: "mcp__ura__record",
  tool: "record",
  args: { nonce },
});
export const observe = (id: string) => ({ id, modelName: "mcp__ura__observe", tool: "observe", args: {} });
export const byArgs = (tool: string, args: unknown): LedgerCallback => ({ tool, args });
export const byId = (tool: string, args: unknown, value: string): LedgerCallback => ({
  tool,
  args,
  identity: { kind: "call_id", value },
});

/** The SidecarError a promise rejects with (anything else fails the test). */
export async function rejection(promise: Promise<unknown>): Promise<SidecarError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SidecarError) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}

/** The id of the call a callback was admitted to; throws naming the outcome when it was not admitted. */
export function admittedId(outcome: MatchOutcome): string {
  if (outcome.kind !== "admitted") throw new Error(`expected admitted, got ${JSON.stringify(outcome)}`);
  return outcome.call.id;
}
