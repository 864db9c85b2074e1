import { describe, expect, test } from "bun:test";
import type { HubMessage, HubRequest, HubToolMessage } from "../hub/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import { applyContextPolicy } from "./apply-context.ts";
import { ContextPolicyError, contextFailureRecord } from "./context-policy-error.ts";
import { contextDecisionSchema } from "./decision-schema.ts";
import { estimateTokens } from "./estimate.ts";
import { type ContextPolicy, contextPolicySchema } from "./policy-schema.ts";

const slidingWindow = (settings: Record<string, number>): ContextPolicy =>
  contextPolicySchema.parse({ policy: "sliding_window", ...settings });

/** One call/result block; the result carries `images` images of `imageChars` base64 chars. */
function block(
  id: string,
  options: { images?: number; imageChars?: number; text?: string } = {},
): HubMessage[] {
  const images = Array.from({ length: options.images ?? 0 }, () => ({
    type: "image" as const,
    mediaType: "image/png",
    data: "A".repeat(options.imageChars ?? 4000),
  }));
  return [
    { role: "assistant", text: null, toolCalls: [{ id, name: "capture_image", arguments: `{"n":"${id}"}` }] },
    {
      role: "tool",
      toolCallId: id,
      name: "capture_image",
      content: [{ type: "text", text: options.text ?? "ok" }, ...images],
    },
  ];
}

function request(messages: HubMessage[]): HubRequest {
  return {
    model: "qwen",
    messages: [
      { role: "system", content: [{ type: "text", text: "You drive a robot arm." }] },
      { role: "user", content: [{ type: "text", text: "Stack the blocks." }] },
      ...messages,
    ],
    tools: [{ name: "capture_image", description: "Take a picture", parameters: { type: "object" } }],
    temperature: 0.2,
    ignored: [],
  };
}

const toolImagesLeft = (messages: HubMessage[]) =>
  messages.flatMap((m) => (m.role === "tool" ? m.content.filter((p) => p.type === "image") : [])).length;

describe("identity", () => {
  test("returns the very request object, with both estimates equal", () => {
    const input = request(block("a", { images: 3 }));
    const { request: output, decision } = applyContextPolicy(input, { policy: "identity" });
    expect(output).toBe(input);
    expect(decision).toEqual({
      policy: "identity",
      estimate_before: estimateTokens(input),
      estimate_after: estimateTokens(input),
      reduced: false,
      images_omitted: [],
      blocks_removed: [],
    });
  });

  test("still rejects a broken history", () => {
    const input = request([block("a")[0] as HubMessage]);
    expect(() => applyContextPolicy(input, { policy: "identity" })).toThrow(
      /tool call "a" \(capture_image\) has no tool result/,
    );
  });
});

describe("sliding_window", () => {
  test("under max_input_tokens the request passes through untouched", () => {
    const input = request(block("a", { images: 2 }));
    const { request: output, decision } = applyContextPolicy(
      input,
      slidingWindow({ max_input_tokens: 100_000, target_input_tokens: 10 }),
    );
    expect(output).toBe(input);
    expect(decision.reduced).toBe(false);
  });

  // Eviction in whole batches: with minimum 6 and batch 2, 6 or 7 images stay, never fewer.
  // Five old text-heavy blocks force the policy past the image phase, so the
  // image phase runs until only the minimum (plus a partial batch) is left.
  test.each([
    [5, 5],
    [6, 6],
    [7, 7],
    [8, 6],
    [9, 7],
    [10, 6],
    [11, 7],
    [30, 6],
  ])("min 6, batch 2: %i tool images → %i kept", (eligible, kept) => {
    const old = ["o1", "o2", "o3", "o4", "o5"].flatMap((id) => block(id, { text: "x".repeat(20_000) }));
    const recent = Array.from({ length: eligible }, (_, i) => block(`r${i}`, { images: 1 })).flat();
    const input = request([...old, ...recent]);
    const policy = slidingWindow({
      max_input_tokens: 1_000 * kept + 100 * eligible + 2_000,
      target_input_tokens: 1_000 * kept + 100 * eligible + 2_000,
      min_recent_tool_images: 6,
      image_eviction_batch_size: 2,
      keep_recent_blocks: eligible,
    });
    const { request: output, decision } = applyContextPolicy(input, policy);
    expect(toolImagesLeft(output.messages)).toBe(kept);
    expect(decision.images_omitted).toEqual(
      Array.from({ length: eligible - kept }, (_, i) => ({ toolCallId: `r${i}`, index: 1 })),
    );
    expect(decision.blocks_removed).toEqual(
      ["o1", "o2", "o3", "o4", "o5"].map((id) => ({ toolCallIds: [id] })),
    );
    // The omitted ones are the oldest, each replaced in place by its notice.
    const r0 = output.messages.find((m): m is HubToolMessage => m.role === "tool" && m.toolCallId === "r0");
    expect(r0?.content[1]).toEqual(
      eligible > kept
        ? { type: "text", text: "[image omitted by the context policy: tool result r0, image 1]" }
        : { type: "image", mediaType: "image/png", data: "A".repeat(4000) },
    );
  });

  test("the image phase stops at the first batch that reaches the target", () => {
    const input = request(Array.from({ length: 10 }, (_, i) => block(`c${i}`, { images: 1 })).flat());
    const before = estimateTokens(input);
    const { request: output, decision } = applyContextPolicy(
      input,
      slidingWindow({
        max_input_tokens: before - 1,
        target_input_tokens: before - 1500,
        min_recent_tool_images: 0,
        image_eviction_batch_size: 2,
      }),
    );
    expect(decision.images_omitted.map((o) => o.toolCallId)).toEqual(["c0", "c1"]);
    expect(decision.blocks_removed).toEqual([]);
    expect(decision.estimate_after).toBe(estimateTokens(output));
    expect(toolImagesLeft(output.messages)).toBe(8);
  });

  test("the images it omits are stale: the client's own parts, which no longer history sends again", () => {
    const input = request(Array.from({ length: 10 }, (_, i) => block(`c${i}`, { images: 1 })).flat());
    const policy = slidingWindow({
      max_input_tokens: estimateTokens(input) - 1,
      target_input_tokens: estimateTokens(input) - 1500,
      min_recent_tool_images: 0,
      image_eviction_batch_size: 2,
    });
    const { stale } = applyContextPolicy(input, policy);
    const imageOf = (id: string) =>
      input.messages.find((m): m is HubToolMessage => m.role === "tool" && m.toolCallId === id)?.content[1];
    expect(stale).toHaveLength(2);
    expect(stale[0]).toBe(imageOf("c0") as never);
    expect(stale[1]).toBe(imageOf("c1") as never);
    // Two more turns: the history only grows, so c0 and c1 stay omitted.
    const longer = {
      ...input,
      messages: [...input.messages, ...block("c10", { images: 1 }), ...block("c11")],
    };
    const { decision } = applyContextPolicy(longer, policy);
    expect(decision.images_omitted.slice(0, 2).map((o) => o.toolCallId)).toEqual(["c0", "c1"]);
    // Under max_input_tokens nothing is omitted, nothing is stale.
    expect(
      applyContextPolicy(input, slidingWindow({ max_input_tokens: 100_000, target_input_tokens: 100_000 }))
        .stale,
    ).toEqual([]);
  });

  test("a frame left out only with its removed block is not stale: a longer history can send it again", () => {
    const image = (chars: number, letter: string) => ({
      type: "image" as const,
      mediaType: "image/png",
      data: letter.repeat(chars),
    });
    const [big, small] = [image(20_000, "B"), image(40, "S")];
    const first: HubMessage[] = [
      { role: "assistant", text: null, toolCalls: [{ id: "a", name: "capture_image", arguments: "{}" }] },
      {
        role: "tool",
        toolCallId: "a",
        name: "capture_image",
        content: [{ type: "text", text: "ok" }, big, small],
      },
    ];
    // Every tool image protected at first (3 of them), one block kept: the oldest block goes whole.
    const policy = slidingWindow({
      max_input_tokens: 6_000,
      target_input_tokens: 4_000,
      min_recent_tool_images: 3,
      image_eviction_batch_size: 1,
      keep_recent_blocks: 1,
    });
    const turn = request([...first, ...block("b", { images: 1, imageChars: 40, text: "y".repeat(8_000) })]);
    const two = applyContextPolicy(turn, policy);
    expect(two.decision.blocks_removed).toEqual([{ toolCallIds: ["a"] }]);
    expect(two.decision.images_omitted).toEqual([]);
    expect(two.stale).toEqual([]);
    // One more image makes the big one omissible; its notice alone reaches the target, so block
    // a comes back and its small frame is sent again.
    const three = applyContextPolicy(
      { ...turn, messages: [...turn.messages, ...block("c", { images: 1, imageChars: 40 })] },
      policy,
    );
    expect(three.decision.blocks_removed).toEqual([]);
    expect(three.decision.images_omitted).toEqual([{ toolCallId: "a", index: 1 }]);
    const a = three.request.messages.find(
      (m): m is HubToolMessage => m.role === "tool" && m.toolCallId === "a",
    );
    expect(a?.content[2]).toBe(small);
    expect(three.stale).toEqual([big]);
    expect(three.stale[0]).toBe(big);
  });

  test("user images are never omitted and kept messages are the same objects", () => {
    const userImage: HubMessage = {
      role: "user",
      content: [{ type: "image", mediaType: "image/png", data: "B".repeat(40_000) }],
    };
    const input = request([
      ...block("a", { images: 2 }),
      userImage,
      ...block("b", { images: 2 }),
      ...block("c"),
    ]);
    const { request: output, decision } = applyContextPolicy(
      input,
      slidingWindow({
        max_input_tokens: 12_000,
        target_input_tokens: 12_000,
        min_recent_tool_images: 0,
        keep_recent_blocks: 1,
      }),
    );
    expect(output.messages).toContain(userImage);
    expect(output.tools).toBe(input.tools);
    expect(output.messages[0]).toBe(input.messages[0] as HubMessage);
    expect(toolImagesLeft(output.messages)).toBe(0);
    expect(decision.blocks_removed).toEqual([]);
    expect(contextDecisionSchema.parse(decision)).toEqual(decision);
  });

  test("a block is removed whole: the assistant message and every result of its batch", () => {
    const batch: HubMessage[] = [
      {
        role: "assistant",
        text: "Looking twice.",
        toolCalls: [
          { id: "p", name: "capture_image", arguments: "{}" },
          { id: "q", name: "capture_image", arguments: "{}" },
        ],
      },
      {
        role: "tool",
        toolCallId: "p",
        name: "capture_image",
        content: [{ type: "text", text: "x".repeat(8_000) }],
      },
      {
        role: "tool",
        toolCallId: "q",
        name: "capture_image",
        content: [{ type: "text", text: "y".repeat(8_000) }],
      },
    ];
    const input = request([...batch, ...block("r"), ...block("s")]);
    const { request: output, decision } = applyContextPolicy(
      input,
      slidingWindow({ max_input_tokens: 1_000, target_input_tokens: 1_000, keep_recent_blocks: 2 }),
    );
    expect(decision.blocks_removed).toEqual([{ toolCallIds: ["p", "q"] }]);
    expect(output.messages).toEqual([...input.messages.slice(0, 2), ...input.messages.slice(5)]);
    expect(decision.estimate_after).toBe(estimateTokens(output));
  });

  test("protected content over the target fails explicitly", () => {
    const input = request(block("a", { text: "z".repeat(40_000) }));
    let error: unknown;
    try {
      applyContextPolicy(
        input,
        slidingWindow({ max_input_tokens: 5_000, target_input_tokens: 4_000, keep_recent_blocks: 1 }),
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SidecarError);
    const sidecarError = error as SidecarError;
    expect(sidecarError.kind).toBe("request_too_large");
    expect(sidecarError.status).toBe(400);
    expect(sidecarError.message).toMatch(
      /^context policy sliding_window: the request is still ~\d+ tokens .* over target_input_tokens 4000/,
    );
    // The failure carries the decision reached so far, for the failed exchange's record.
    expect(error).toBeInstanceOf(ContextPolicyError);
    const decision = contextDecisionSchema.parse((error as ContextPolicyError).decision);
    expect(decision).toMatchObject({
      policy: "sliding_window",
      reduced: false,
      images_omitted: [],
      blocks_removed: [],
    });
    expect(decision.estimate_before).toBe(estimateTokens(input));
    expect(decision.estimate_after).toBeGreaterThan(4_000);
    expect(contextFailureRecord(error)).toEqual({ context_decision: decision });
    expect(contextFailureRecord(new SidecarError("request_too_large", "image too big"))).toEqual({});
  });
});
