/**
 * The upstream body of an exchange, built from the converted hub request; under
 * the body_budget policy reduced until it fits (src/context/apply-body-budget.ts),
 * measured by an exact size model, so the body is serialised once.
 */
import { applyBodyBudget, type ContextDecision } from "../context/apply-context.ts";
import type { ContextPolicy } from "../context/policy-schema.ts";
import type { HubRequest } from "../hub/schema.ts";
import { stringifyReusingMembers } from "../lib/frozen-json.ts";
import { buildChatRequest, type ChatTarget } from "../upstream/build-chat-request.ts";
import { createChatBodySizer, jsonStringDataBytes } from "../upstream/chat-body-size.ts";
import type { ChatRequest } from "../upstream/chat-schema.ts";

export type UpstreamBody = {
  /** The hub request the body was built from (body_budget's reduced one). */
  request: HubRequest;
  chat: ChatRequest;
  /** JSON.stringify(chat): the bytes sent. */
  body: string;
  /** What body_budget did (absent for other policies). */
  budget?: Pick<ContextDecision, "body_budget" | "images_omitted" | "blocks_removed" | "reduced">;
};

export async function buildUpstreamBody(
  converted: HubRequest,
  policy: ContextPolicy,
  decision: ContextDecision,
  options: { target: ChatTarget; providerLimitBytes: number },
): Promise<UpstreamBody> {
  const render = (request: HubRequest) => {
    const chat = buildChatRequest(request, options.target);
    // The same text as JSON.stringify(chat); a repeated tool list's JSON is reused.
    return { request, chat, body: stringifyReusingMembers(chat) };
  };
  if (policy.policy !== "body_budget") return render(converted);
  const sizer = createChatBodySizer(converted, options.target, (part) => ({
    mediaType: part.mediaType,
    dataBytes: jsonStringDataBytes(part.data),
  }));
  const budgeted = await applyBodyBudget(converted, policy, decision, {
    providerLimitBytes: options.providerLimitBytes,
    body: sizer,
    resolve: async () => {
      throw new Error("every image of a converted request is already sized");
    },
  });
  const upstream = render(budgeted.request);
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
