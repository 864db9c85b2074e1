/**
 * The error a context policy throws when protected content alone exceeds the
 * target: a `request_too_large` SidecarError (a final 400 in every envelope) that
 * also carries the decision reached so far (estimates, what was evicted), so the
 * failed exchange is recorded with it, like a successful one's `after_context`.
 */
import { SidecarError } from "../lib/errors.ts";
import type { ContextDecision } from "./decision-schema.ts";

export class ContextPolicyError extends SidecarError {
  readonly decision: ContextDecision;

  /** `param`: the client's field of what is over (when the policy can name one). */
  constructor(message: string, decision: ContextDecision, options: { param?: string } = {}) {
    super("request_too_large", message, options);
    this.name = "ContextPolicyError";
    this.decision = decision;
  }
}

/** What a failed exchange's status record adds for a context failure (nothing for other errors). */
export function contextFailureRecord(error: unknown): { context_decision?: ContextDecision } {
  return error instanceof ContextPolicyError ? { context_decision: error.decision } : {};
}
