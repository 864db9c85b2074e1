/**
 * The context stage of every route: validate the tool history, then apply the
 * episode's policy to the hub request. Pure and deterministic; the caller records
 * the original request, the returned request and the decision separately.
 * `identity` (and `body_budget`, which acts after the WebP conversion) returns the
 * very request it was given.
 */
import type { HubImagePart, HubRequest } from "../hub/schema.ts";
import { applySlidingWindow } from "./apply-sliding-window.ts";
import type { ContextCut } from "./context-cut.ts";
import type { ContextDecision } from "./decision-schema.ts";
import { estimateTokens } from "./estimate.ts";
import type { ContextPolicy } from "./policy-schema.ts";
import { validateToolHistory } from "./validate-history.ts";

export { applyBodyBudget } from "./apply-body-budget.ts";
export { ContextPolicyError, contextFailureRecord } from "./context-policy-error.ts";
export type { ContextDecision } from "./decision-schema.ts";

export interface ContextResult {
  request: HubRequest;
  decision: ContextDecision;
  /**
   * Image parts of the given request left out that no later, longer request of the
   * episode sends (sliding_window's omitted images): the episode lets go of their
   * cached WebP. body_budget finds its own after the conversion (apply-body-budget.ts).
   */
  stale: HubImagePart[];
  /** sliding_window's reduction, for the episode's next request (body_budget's comes after the conversion). */
  cut?: ContextCut;
}

/**
 * Throws SidecarError `invalid_request` (broken history) or ContextPolicyError
 * (`request_too_large`, over target; carries the decision for the failure record).
 */
export function applyContextPolicy(
  request: HubRequest,
  policy: ContextPolicy,
  previous?: ContextCut,
): ContextResult {
  validateToolHistory(request.messages);
  switch (policy.policy) {
    // body_budget acts after the WebP conversion (applyBodyBudget); here it passes the request on.
    case "identity":
    case "body_budget": {
      const estimate = estimateTokens(request);
      return {
        request,
        decision: {
          policy: policy.policy,
          estimate_before: estimate,
          estimate_after: estimate,
          reduced: false,
          images_omitted: [],
          blocks_removed: [],
        },
        stale: [],
      };
    }
    case "sliding_window":
      return applySlidingWindow(request, policy, previous);
    default: {
      const unknown: never = policy;
      throw new Error(`unknown context policy ${JSON.stringify(unknown)}`);
    }
  }
}
