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

function run(request: HubRequest, budgetPolicy: BodyBudgetPolicy, measure = jsonBytes, limit = 1_000_000) {
  const { decision } = applyContextPolicy(request, budgetPolicy);
  return applyBodyBudget(request, budgetPolicy, decision, {
    providerLimitBytes: limit,
    measureBody: measure,
  });
}

describe("body_budget", () => {
  test("under the budget the request passes unchanged, with its measured size", () => {
    const request = cameraRequest(3);
    const { request: out, decision } = run(request, policy({ max_body_bytes: 100_000 }));
    expect(out).toBe(request);
    expect(decision.reduced).toBe(false);
    expect(decision.body_budget).toMatchObject({ max_body_bytes: 100_000, bytes_after: jsonBytes(request) });
    expect(contextDecisionSchema.parse(decision)).toEqual(decision);
  });

  test("over it, the oldest frames go in whole batches with notices; the newest and the user's image stay", () => {
    const request = cameraRequest(40, true);
    const budget = 200_000;
    const { request: out, decision } = run(
      request,
      policy({ max_body_bytes: budget, image_eviction_batch_size: 4 }),
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
  });

  test("blocks whose images are already omitted go in few measurements, and no more of them than needed", () => {
    // A long camera history: every evictable frame is omitted and the newest 13 are still
    // over the budget, so whole blocks go, dozens of text-only ones before any frame.
    const request = cameraRequest(69);
    const budget = 100_000;
    const measured: { messages: number; bytes: number }[] = [];
    const measure = (r: HubRequest) => {
      const bytes = jsonBytes(r);
      measured.push({ messages: r.messages.length, bytes });
      return bytes;
    };
    const { request: out, decision } = run(request, policy({ max_body_bytes: budget }), measure);
    expect(jsonBytes(out)).toBeLessThanOrEqual(budget);
    expect(decision.images_omitted).toHaveLength(56);
    expect(decision.blocks_removed.length).toBeGreaterThan(56);
    expect(out.messages).toHaveLength(request.messages.length - 2 * decision.blocks_removed.length);
    // One block fewer was measured and is over the budget: the fewest blocks went.
    expect(measured.find((m) => m.messages === out.messages.length + 2)?.bytes).toBeGreaterThan(budget);
    // Not one measurement (one multi-MB body built) per block removed.
    expect(measured.length).toBeLessThan(20);
    // The body measured last is the one returned (the caller sends the last body it built).
    expect(measured.at(-1)).toEqual({ messages: out.messages.length, bytes: jsonBytes(out) });
    expect(decision.body_budget?.bytes_after).toBe(jsonBytes(out));
  });

  test("when the real body is larger than estimated, more batches go until it fits", () => {
    const request = cameraRequest(30);
    // A body whose framing costs 1000 bytes per message more than the hub JSON shows.
    const inflated = (r: HubRequest) => jsonBytes(r) + 1000 * r.messages.length;
    const budget = 150_000;
    const { request: out } = run(
      request,
      policy({ max_body_bytes: budget, image_eviction_batch_size: 2 }),
      inflated,
    );
    expect(inflated(out)).toBeLessThanOrEqual(budget);
  });

  test("the budget is never above the provider's limit", () => {
    const { decision } = run(cameraRequest(20), policy({ max_body_bytes: 10_000_000 }), jsonBytes, 120_000);
    expect(decision.body_budget?.max_body_bytes).toBe(120_000);
    expect(decision.body_budget?.bytes_after).toBeLessThanOrEqual(120_000);
  });

  test("old call/result blocks go once no frame is left to omit; protected content over the budget fails", () => {
    const request = cameraRequest(12);
    const tight = policy({ max_body_bytes: 2_500, min_recent_tool_images: 0, keep_recent_blocks: 1 });
    const { request: out, decision } = run(
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
    let error: unknown;
    try {
      run(cameraRequest(3, true), policy({ max_body_bytes: 20_000 }));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ContextPolicyError);
    expect((error as ContextPolicyError).kind).toBe("request_too_large");
    expect((error as ContextPolicyError).message).toContain("over max_body_bytes 20000");
    expect((error as ContextPolicyError).decision.body_budget?.max_body_bytes).toBe(20_000);
  });
});
