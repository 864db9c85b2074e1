import { describe, expect, test } from "bun:test";
import { applyContextPolicy } from "../context/apply-context.ts";
import { type BodyBudgetPolicy, contextPolicySchema } from "../context/policy-schema.ts";
import type { HubMessage, HubRequest } from "../hub/schema.ts";
import { buildChatRequest } from "../upstream/build-chat-request.ts";
import { buildUpstreamBody } from "./build-upstream-body.ts";

const target = { model: "qwen3-vl-plus", imageInput: true, parallelToolCalls: true };
// A camera history at 1/100 scale: the same shape, bodies small enough to render every candidate.
const limit = 64 * 1024;

/** A converted camera history: one WebP of 3–7 KB of base64 per turn (sizes from a fixed seed). */
function convertedCameraHistory(turns: number, seed: number): HubRequest {
  let state = seed;
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  const messages: HubMessage[] = [
    { role: "system", content: [{ type: "text", text: "You drive a robot arm." }] },
    { role: "user", content: [{ type: "text", text: "Watch the table; observe every turn." }] },
  ];
  for (let i = 0; i < turns; i++) {
    const id = `call_${i}`;
    messages.push(
      { role: "assistant", text: null, toolCalls: [{ id, name: "observe", arguments: "{}" }] },
      {
        role: "tool",
        toolCallId: id,
        name: "observe",
        content: [
          { type: "text", text: `observation ${i}: "front" camera` },
          {
            type: "image",
            mediaType: "image/webp",
            data: "Q".repeat(Math.floor(3_000 + next() * 4_000)),
          },
        ],
      },
    );
  }
  return { model: "ura-qwen", messages, tools: [], ignored: [] };
}

/**
 * The policy's rule, by brute force: render every candidate (batches of frames
 * omitted oldest first, then blocks removed oldest first) and take the first whose
 * body fits. What the policy did before it had a size model, minus its estimate.
 */
function firstFittingBody(request: HubRequest, policy: BodyBudgetPolicy): string {
  const tool = request.messages.filter((m) => m.role === "tool");
  const batches = Math.floor(
    Math.max(0, tool.length - policy.min_recent_tool_images) / policy.image_eviction_batch_size,
  );
  const blocks = tool.length - policy.keep_recent_blocks;
  const budget = Math.min(policy.max_body_bytes ?? limit, limit);
  for (let step = 0; step <= batches + Math.max(0, blocks); step++) {
    const omitted = Math.min(step, batches) * policy.image_eviction_batch_size;
    const removed = Math.max(0, step - batches);
    let toolIndex = -1;
    const messages = request.messages.flatMap((message, i): HubMessage[] => {
      if (message.role === "assistant") return Math.floor((i - 2) / 2) < removed ? [] : [message];
      if (message.role !== "tool") return [message];
      toolIndex++;
      if (toolIndex < removed) return [];
      if (toolIndex >= omitted) return [message];
      const notice = `[image omitted by the context policy: tool result ${message.toolCallId}, image 1]`;
      return [{ ...message, content: [message.content[0] as never, { type: "text", text: notice }] }];
    });
    const body = JSON.stringify(buildChatRequest({ ...request, messages }, target));
    if (Buffer.byteLength(body) <= budget) return body;
  }
  throw new Error("nothing fits");
}

describe("buildUpstreamBody under body_budget", () => {
  test("sends the body the policy's rule gives, at every turn of a long history", async () => {
    const settings = [
      {},
      { image_eviction_batch_size: 2, min_recent_tool_images: 2 },
      { max_body_bytes: 30_000, min_recent_tool_images: 9, keep_recent_blocks: 3 },
    ];
    for (const [s, extra] of settings.entries()) {
      const policy = contextPolicySchema.parse({ policy: "body_budget", ...extra }) as BodyBudgetPolicy;
      for (const turns of [1, 9, 14, 40, 71, 83, 100]) {
        const request = convertedCameraHistory(turns, 7 * turns + s);
        const { decision } = applyContextPolicy(request, policy);
        const built = await buildUpstreamBody(request, policy, decision, {
          target,
          providerLimitBytes: limit,
        });
        expect({ turns, s, same: built.body === firstFittingBody(request, policy) }).toEqual({
          turns,
          s,
          same: true,
        });
        expect(built.budget?.body_budget?.bytes_after).toBe(Buffer.byteLength(built.body));
      }
    }
  });
});
