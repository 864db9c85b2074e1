/**
 * The upstream body of an exchange: the hub request after context, its PNGs as
 * WebP, rendered once. Under the body_budget policy it is first reduced until it
 * fits (src/context/apply-body-budget.ts), measured by an exact size model, and
 * only the images it keeps are converted. Under both reducing policies the episode
 * lets go of the cached WebP of the frames left out for good.
 */
import { applyBodyBudget, type ContextDecision } from "../context/apply-context.ts";
import type { ContextMemory } from "../context/context-cut.ts";
import type { ContextPolicy } from "../context/policy-schema.ts";
import type { HubImagePart, HubRequest } from "../hub/schema.ts";
import type { ImageConverter, ImageStats } from "../images/convert-request.ts";
import { type KnownSpan, stringifyKnowingMembers } from "../lib/frozen-json.ts";
import { buildChatRequest, type ChatTarget } from "../upstream/build-chat-request.ts";
import { createChatBodySizer } from "../upstream/chat-body-size.ts";
import type { ChatRequest } from "../upstream/chat-schema.ts";

export type UpstreamBody = {
  /** The hub request the body was built from (converted; body_budget's reduced one). */
  request: HubRequest;
  chat: ChatRequest;
  /** JSON.stringify(chat): the bytes sent. */
  body: string;
  /** Where `body` holds the JSON of a frozen member (a repeated tool list), for the records. */
  known: readonly KnownSpan[];
  /** What the image conversion did. */
  stats: ImageStats;
  /** What body_budget did (absent for other policies). */
  budget?: Pick<ContextDecision, "body_budget" | "images_omitted" | "blocks_removed" | "reduced">;
};

export async function buildUpstreamBody(
  request: HubRequest,
  policy: ContextPolicy,
  decision: ContextDecision,
  options: {
    target: ChatTarget;
    providerLimitBytes: number;
    images: ImageConverter;
    /** Images of the client's request the context stage left out for good (ContextResult.stale). */
    stale?: readonly HubImagePart[];
    /** The episode's previous body_budget reduction, tried first and replaced by this one's. */
    memory?: ContextMemory;
  },
): Promise<UpstreamBody> {
  const render = (converted: HubRequest, stats: ImageStats) => {
    const chat = buildChatRequest(converted, options.target);
    // The same text as JSON.stringify(chat); a repeated tool list's JSON is reused.
    const { text, known } = stringifyKnowingMembers(chat);
    return { request: converted, chat, body: text, known, stats };
  };
  if (policy.policy !== "body_budget") {
    const { request: converted, stats } = await options.images.convertRequest(request, {
      forget: options.stale ?? [],
    });
    return render(converted, stats);
  }
  const images = options.images.prepare(request);
  const budgeted = await applyBodyBudget(request, policy, decision, {
    providerLimitBytes: options.providerLimitBytes,
    body: createChatBodySizer(request, options.target, images.formOf),
    resolve: images.resolve,
    previous: options.memory?.previous,
  });
  if (options.memory) options.memory.previous = budgeted.cut;
  // What the budget has dropped for good is not kept in the image cache for this episode.
  const { request: converted, stats } = await images.finish(budgeted.request, { forget: budgeted.stale });
  const upstream = render(converted, stats);
  const { body_budget, images_omitted, blocks_removed, reduced } = budgeted.decision;
  const sent = Buffer.byteLength(upstream.body, "utf8");
  // The size model is exact (property-tested); a body over the budget must never go out even if it were not.
  if (body_budget && sent > body_budget.max_body_bytes) {
    throw new Error(
      `body_budget: the body built is ${sent} bytes, over max_body_bytes ${body_budget.max_body_bytes}, though measured at ${body_budget.bytes_after}`,
    );
  }
  return {
    ...upstream,
    budget: {
      ...(body_budget ? { body_budget: { ...body_budget, bytes_after: sent } } : {}),
      images_omitted,
      blocks_removed,
      reduced,
    },
  };
}
