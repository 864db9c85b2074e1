/**
 * The context stage of every route: validate the tool history, then apply the
 * episode's policy to the hub request. Pure and deterministic; the caller records
 * the original request, the returned request and the decision separately.
 * `identity` (and `body_budget`, which acts after the WebP conversion) returns the
 * very request it was given — unless the model's window guard (window-guard.ts) finds
 * the prompt over the model's window: then `identity` is reduced the way
 * sliding_window reduces, and the decision records it (`window.engaged`).
 */
import type { HubImagePart, HubRequest } from "../hub/schema.ts";
import type { FrozenMemos } from "../lib/frozen-memos.ts";
import type { TextHold } from "../lib/known-texts.ts";
import { applySlidingWindow } from "./apply-sliding-window.ts";
import type { ContextCut } from "./context-cut.ts";
import type { ContextDecision } from "./decision-schema.ts";
import { estimateTokens } from "./estimate.ts";
import type { ContextPolicy, SlidingWindowPolicy } from "./policy-schema.ts";
import { validateToolHistory } from "./validate-history.ts";
import type { WindowGuard } from "./window-guard.ts";

export { applyBodyBudget } from "./apply-body-budget.ts";
export { ContextPolicyError, contextFailureRecord } from "./context-policy-error.ts";

import { ContextPolicyError } from "./context-policy-error.ts";

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
 * (`request_too_large`, over target or, after every reduction, still over the model's
 * window; carries the decision for the failure record). `window`: the episode model's
 * window guard (none: no guard, as in tests of a policy alone). `keys`: under body_budget,
 * the messages' keys (message-keys.ts), by which a resent message's size is kept in `memos`.
 */
export function applyContextPolicy(
  request: HubRequest,
  policy: ContextPolicy,
  previous?: ContextCut,
  window?: WindowGuard,
  memos?: FrozenMemos,
  texts?: TextHold,
  keys?: readonly object[],
): ContextResult {
  validateToolHistory(request.messages);
  switch (policy.policy) {
    case "identity": {
      if (window === undefined) return passedOn(request, policy.policy, memos, texts);
      // The guard alone: no threshold of identity's own, sliding_window's default walk.
      try {
        const guarded = applySlidingWindow(request, guardOnly, previous, window, memos, texts);
        return { ...guarded, decision: { ...guarded.decision, policy: "identity" } };
      } catch (error) {
        if (error instanceof ContextPolicyError)
          throw new ContextPolicyError(error.message, { ...error.decision, policy: "identity" });
        throw error;
      }
    }
    // body_budget acts after the WebP conversion (applyBodyBudget); here it passes the request on.
    case "body_budget":
      return passedOn(request, policy.policy, memos, texts, keys);
    case "sliding_window":
      return applySlidingWindow(request, policy, previous, window, memos, texts);
    default: {
      const unknown: never = policy;
      throw new Error(`unknown context policy ${JSON.stringify(unknown)}`);
    }
  }
}

/**
 * What the window guard reduces under `identity`: sliding_window's default protections
 * (the newest 6 tool images, batches of 2, the last 2 blocks) with no threshold but the guard's.
 */
const guardOnly: SlidingWindowPolicy = {
  policy: "sliding_window",
  max_input_tokens: Number.POSITIVE_INFINITY,
  target_input_tokens: Number.POSITIVE_INFINITY,
  min_recent_tool_images: 6,
  image_eviction_batch_size: 2,
  keep_recent_blocks: 2,
};

function passedOn(
  request: HubRequest,
  policy: "identity" | "body_budget",
  memos: FrozenMemos | undefined,
  texts: TextHold | undefined,
  keys?: readonly object[],
): ContextResult {
  const estimate = estimateTokens(request, memos, texts, keys);
  return {
    request,
    decision: {
      policy,
      estimate_before: estimate,
      estimate_after: estimate,
      reduced: false,
      images_omitted: [],
      blocks_removed: [],
    },
    stale: [],
  };
}
