import { describe, expect, test } from "bun:test";
import type { HubMessage, HubRequest } from "../hub/schema.ts";
import { applyBodyBudget } from "./apply-body-budget.ts";
import { applyContextPolicy } from "./apply-context.ts";
import { ContextPolicyError } from "./context-policy-error.ts";
import { contextDecisionSchema } from "./decision-schema.ts";
import { type BodyBudgetPolicy, contextPolicySchema } from "./policy-schema.ts";

const policy = (settings: Record<string, number> = {}) =>
  contextPolicySchema.parse({ policy: "body_budget", ...settings }) as BodyBudgetPolicy;

/** A camera turn: the call, and its result carrying one frame of `frameChars` base64 characters. */
function turn(n: number, frameChars = 10_000): HubMessage[] {
  const id = `call_${n}`;
  return [
    { role: "assistant", text: null, toolCalls: [{ id, name: "observe", arguments: "{}" }] },
    {
      role: "tool",
      toolCallId: id,
      name: "observe",
      content: [
        { type: "text", text: `frame ${n}` },
        {
          type: "image",
          mediaType: "image/webp",
          data: String.fromCharCode(65 + (n % 26)).repeat(frameChars),
        },
      ],
    },
  ];
}

function cameraRequest(turns: number, userImage = false): HubRequest {
  return {
    model: "qwen",
    messages: [
      { role: "system", content: [{ type: "text", text: "You drive a robot arm." }] },
      {
        role: "user",
        content: [
          { type: "text", text: "Watch the table." },
          ...(userImage
            ? [{ type: "image" as const, mediaType: "image/webp", data: "U".repeat(30_000) }]
            : []),
        ],
      },
      ...Array.from({ length: turns }, (_, i) => turn(i + 1)).flat(),
    ],
    tools: [{ name: "observe", description: "Take a picture", parameters: { type: "object" } }],
    ignored: [],
  };
}

const jsonBytes = (request: HubRequest) => Buffer.byteLength(JSON.stringify(request));
const framesLeft = (request: HubRequest) =>
  request.messages.flatMap((m) =>
    m.role === "tool" ? m.content.flatMap((p) => (p.type === "image" ? [m.toolCallId] : [])) : [],
  );

/** The hub JSON of the request with these messages stands in for the upstream body (every image sized). */
const hubJson = (request: HubRequest, perMessage = 0) => ({
  measure: (messages: readonly HubMessage[]) => ({
    bytes: jsonBytes({ ...request, messages: [...messages] }) + perMessage * messages.length,
    unknown: [],
  }),
});

function run(request: HubRequest, budgetPolicy: BodyBudgetPolicy, perMessage = 0, limit = 1_000_000) {
  const { decision } = applyContextPolicy(request, budgetPolicy);
  return applyBodyBudget(request, budgetPolicy, decision, {
    providerLimitBytes: limit,
    body: hubJson(request, perMessage),
    resolve: () => Promise.reject(new Error("every image is sized")),
  });
}

describe("body_budget", () => {
  test("under the budget the request passes unchanged, with its measured size", async () => {
    const request = cameraRequest(3);
    const { request: out, decision } = await run(request, policy({ max_body_bytes: 100_000 }));
    expect(out).toBe(request);
    expect(decision.reduced).toBe(false);
    expect(decision.body_budget).toMatchObject({ max_body_bytes: 100_000, bytes_after: jsonBytes(request) });
    expect(contextDecisionSchema.parse(decision)).toEqual(decision);
  });

  test("over it, the oldest frames go in whole batches with notices; the newest and the user's image stay", async () => {
    const request = cameraRequest(40, true);
    const budget = 200_000;
    const { request: out, decision } = await run(
      request,
      policy({ max_body_bytes: budget, image_eviction_batch_size: 4, low_water_fraction: 1 }),
    );
    expect(jsonBytes(out)).toBeLessThanOrEqual(budget);
    const kept = framesLeft(out);
    const omitted = 40 - kept.length;
    expect(omitted % 4).toBe(0);
    // The kept frames are the newest ones, in order.
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => `call_${omitted + i + 1}`));
    expect(kept.length).toBeGreaterThanOrEqual(6);
    // Within one batch of the budget: nothing more was omitted than needed.
    expect(jsonBytes(out) + 4 * 10_000).toBeGreaterThan(budget);
    expect(decision.images_omitted.map((o) => o.toolCallId)).toEqual(
      Array.from({ length: omitted }, (_, i) => `call_${i + 1}`),
    );
    const userMessage = out.messages[1];
    expect(userMessage?.role === "user" && userMessage.content.some((p) => p.type === "image")).toBe(true);
    const firstResult = out.messages.find((m) => m.role === "tool");
    expect(firstResult?.role === "tool" && firstResult.content[1]).toEqual({
      type: "text",
      text: "[image omitted by the context policy: tool result call_1, image 1]",
    });
    expect(decision).toMatchObject({ policy: "body_budget", reduced: true, blocks_removed: [] });
    expect(decision.body_budget?.bytes_after).toBe(jsonBytes(out));
    expect(decision.body_budget?.bytes_before).toBe(jsonBytes(request));
  });

  test("once every evictable frame is omitted, the fewest old blocks go", async () => {
    // A long camera history: the newest 13 frames are still over the budget, so whole
    // blocks go, dozens of text-only ones before any frame.
    const request = cameraRequest(69);
    const budget = 100_000;
    const tight = policy({ max_body_bytes: budget, image_eviction_batch_size: 8, low_water_fraction: 1 });
    const { request: out, decision } = await run(request, tight);
    expect(jsonBytes(out)).toBeLessThanOrEqual(budget);
    expect(decision.images_omitted).toHaveLength(56);
    expect(decision.blocks_removed.length).toBeGreaterThan(56);
    expect(out.messages).toHaveLength(request.messages.length - 2 * decision.blocks_removed.length);
    // With the last block removed put back (its frame is among the newest, not omitted) it is over.
    const back = 2 + 2 * (decision.blocks_removed.length - 1);
    const oneFewer = [
      ...out.messages.slice(0, 2),
      ...request.messages.slice(back, back + 2),
      ...out.messages.slice(2),
    ];
    expect(jsonBytes({ ...out, messages: oneFewer })).toBeGreaterThan(budget);
  });

  test("when the real body is larger than the hub JSON, more batches go until it fits", async () => {
    const request = cameraRequest(30);
    // A body whose framing costs 1000 bytes per message more than the hub JSON shows.
    const budget = 150_000;
    const { request: out, decision } = await run(
      request,
      policy({ max_body_bytes: budget, image_eviction_batch_size: 2 }),
      1000,
    );
    expect(jsonBytes(out) + 1000 * out.messages.length).toBeLessThanOrEqual(budget);
    expect(decision.body_budget?.bytes_after).toBe(jsonBytes(out) + 1000 * out.messages.length);
  });

  test("the budget is never above the provider's limit", async () => {
    const { decision } = await run(cameraRequest(20), policy({ max_body_bytes: 10_000_000 }), 0, 120_000);
    expect(decision.body_budget?.max_body_bytes).toBe(120_000);
    expect(decision.body_budget?.bytes_after).toBeLessThanOrEqual(120_000);
  });

  test("old call/result blocks go once no frame is left to omit; protected content over the budget fails", async () => {
    const request = cameraRequest(12);
    const tight = policy({ max_body_bytes: 2_500, min_recent_tool_images: 0, keep_recent_blocks: 1 });
    const { request: out, decision } = await run(
      {
        ...request,
        messages: request.messages.map((m) =>
          m.role === "tool" ? { ...m, content: [m.content[0] as never] } : m,
        ),
      },
      tight,
    );
    expect(decision.blocks_removed.length).toBeGreaterThan(0);
    expect(jsonBytes(out)).toBeLessThanOrEqual(2_500);
    const error = await run(cameraRequest(3, true), policy({ max_body_bytes: 20_000 })).catch((e) => e);
    expect(error).toBeInstanceOf(ContextPolicyError);
    expect((error as ContextPolicyError).kind).toBe("request_too_large");
    expect((error as ContextPolicyError).message).toContain("over max_body_bytes 20000");
    expect((error as ContextPolicyError).decision.body_budget).toMatchObject({
      max_body_bytes: 20_000,
      bytes_before: jsonBytes(cameraRequest(3, true)),
    });
    expect((error as ContextPolicyError).decision.body_budget?.bytes_after).toBeGreaterThan(20_000);
  });
});
