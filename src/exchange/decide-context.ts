/**
 * The context stage of an exchange: the episode's policy decides, once, what of the
 * translated request goes upstream, and that one decision is the exchange's
 * `after_context` line (docs/records.md). identity and sliding_window decide on the
 * hub request; body_budget decides on the body as it will be sent, measured by an
 * exact size model (upstream/chat-body-size.ts) with its images' WebP sizes, so it
 * prepares the request's images here (converting only those it needs to size) and
 * the body stage (build-upstream-body.ts) finishes their conversion.
 * The episode remembers the reduction made (context-cut.ts) for its next request.
 */
import { applyBodyBudget, applyContextPolicy, type ContextResult } from "../context/apply-context.ts";
import type { ContextMemory } from "../context/context-cut.ts";
import type { ContextPolicy } from "../context/policy-schema.ts";
import type { WindowGuard } from "../context/window-guard.ts";
import type { HubRequest } from "../hub/schema.ts";
import type { ImageConverter, PreparedImages } from "../images/convert-request.ts";
import type { FrozenMemos } from "../lib/frozen-memos.ts";
import type { TextHold } from "../lib/known-texts.ts";
import {
  type AfterContextFields,
  identicalRequest,
  reducedAsSentUpstream,
} from "../records/exchange-lines.ts";
import type { ChatTarget } from "../upstream/build-chat-request.ts";
import { createChatBodySizer } from "../upstream/chat-body-size.ts";
import { cacheMarkerReserveBytes } from "../upstream/mark-cache-prefix.ts";
import type { ExchangeRun } from "./exchange-run.ts";

export type ContextOutcome = Omit<ContextResult, "cut"> & {
  /** The request as translated, before the policy. */
  translated: HubRequest;
  /** The request's images, checked, when the policy already prepared them (body_budget). */
  prepared?: PreparedImages;
};

export type ContextOptions = {
  target: ChatTarget;
  /** The provider's body limit: body_budget's budget is never above it. */
  providerLimitBytes: number;
  images: ImageConverter;
  /** The episode's previous reduction, tried first and replaced by this one's. */
  memory?: ContextMemory;
  /** The episode model's window guard (src/context/window-guard.ts). */
  window?: WindowGuard;
  /** The episode's memos of its frozen values (measured once). */
  memos?: FrozenMemos;
  /** The request's hold of its long strings: a resent frame's base64 is checked once (known-texts.ts). */
  texts?: TextHold;
};

/**
 * Throws SidecarError `invalid_request` (a broken tool history, an image refused) or
 * ContextPolicyError (`request_too_large`: protected content over the target, carrying
 * the decision reached, for the failure record).
 */
export async function decideContext(
  translated: HubRequest,
  policy: ContextPolicy,
  options: ContextOptions,
): Promise<ContextOutcome> {
  // Under body_budget, what is measured of a message the episode resent is kept by its key.
  const keys = policy.policy === "body_budget" ? options.memory?.keys.keysOf(translated.messages) : undefined;
  const { cut, ...decided } = applyContextPolicy(
    translated,
    policy,
    options.memory?.previous,
    options.window,
    options.memos,
    options.texts,
    keys,
  );
  if (policy.policy !== "body_budget") {
    if (cut && options.memory) options.memory.previous = cut;
    return { ...decided, translated };
  }
  const prepared = options.images.prepare(decided.request);
  // The size model measures the body without the cache markers added last: room is kept for them.
  const room = markerRoom(options.target);
  const roomy =
    policy.max_body_bytes === undefined
      ? policy
      : { ...policy, max_body_bytes: Math.max(1, policy.max_body_bytes - room) };
  const { cut: budgetCut, ...budgeted } = await applyBodyBudget(decided.request, roomy, decided.decision, {
    providerLimitBytes: options.providerLimitBytes - room,
    body: createChatBodySizer(decided.request, options.target, prepared.formOf, options.memos),
    resolve: prepared.resolve,
    previous: options.memory?.previous,
    window: options.window,
    memos: options.memos,
    keys,
  });
  if (options.memory) options.memory.previous = budgetCut;
  return { ...budgeted, translated, prepared };
}

/** Bytes the explicit cache's markers may add to the body after body_budget measured it. */
export function markerRoom(target: ChatTarget): number {
  return target.cacheMarkers ? cacheMarkerReserveBytes : 0;
}

/**
 * The decision as recorded. The request after the policy is kept only when the policy
 * changed it (otherwise the upstream_request line already shows it, and writing it twice
 * doubled the cost); under body_budget not even then: what it reduced is the body as sent.
 */
export function afterContextFields(outcome: ContextOutcome): AfterContextFields {
  const { request, translated, decision } = outcome;
  if (request === translated) return { request: identicalRequest, decision };
  if (decision.policy === "body_budget") return { request: reducedAsSentUpstream, decision };
  return { request, translated, decision };
}

/** The stage: decides for the episode's policy and records the decision. */
export async function applyContext(
  run: ExchangeRun,
  translated: HubRequest,
  options: Omit<ContextOptions, "memory" | "memos">,
): Promise<ContextOutcome> {
  const outcome = await decideContext(translated, run.episode.context, {
    ...options,
    memory: run.episode.contextMemory,
    memos: run.episode.memos,
    ...(run.texts ? { texts: run.texts } : {}),
  });
  run.episode.records.afterContext(run.id, afterContextFields(outcome));
  return outcome;
}
