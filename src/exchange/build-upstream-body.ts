/**
 * The upstream body of an exchange, built from the converted hub request; under
 * the body_budget policy reduced until it fits (src/context/apply-body-budget.ts).
 * The body measured last is the body sent, so it is serialised once per attempt.
 */
import { applyBodyBudget, type ContextDecision } from "../context/apply-context.ts";
import type { ContextPolicy } from "../context/policy-schema.ts";
import type { HubRequest } from "../hub/schema.ts";
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

export function buildUpstreamBody(
  converted: HubRequest,
  policy: ContextPolicy,
  decision: ContextDecision,
  options: { build: (request: HubRequest) => ChatRequest; providerLimitBytes: number },
): UpstreamBody {
  let last: { request: HubRequest; chat: ChatRequest; body: string } | undefined;
  const render = (request: HubRequest) => {
    if (last?.request !== request) {
      const chat = options.build(request);
      last = { request, chat, body: JSON.stringify(chat) };
    }
    return last;
  };
  if (policy.policy !== "body_budget") {
    const { chat, body } = render(converted);
    return { request: converted, chat, body };
  }
  const budgeted = applyBodyBudget(converted, policy, decision, {
    providerLimitBytes: options.providerLimitBytes,
    measureBody: (request) => Buffer.byteLength(render(request).body, "utf8"),
  });
  const { chat, body } = render(budgeted.request);
  const { body_budget, images_omitted, blocks_removed, reduced } = budgeted.decision;
  return {
    request: budgeted.request,
    chat,
    body,
    budget: { body_budget, images_omitted, blocks_removed, reduced },
  };
}
