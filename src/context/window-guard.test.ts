import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { observeHistory } from "../../test/support/observe-history.ts";
import type { HubMessage, HubRequest } from "../hub/schema.ts";
import { solidColourPng } from "../images/generate-png.ts";
import { tokensForPixels } from "../models/image-tokens.ts";
import { applyBodyBudget, applyContextPolicy } from "./apply-context.ts";
import { type ContextCut, createContextMemory } from "./context-cut.ts";
import { ContextPolicyError } from "./context-policy-error.ts";
import { contextDecisionSchema } from "./decision-schema.ts";
import { estimatePromptTokens, estimateTokens } from "./estimate.ts";
import { buildHistory, hubRequestArbitrary, segmentArbitrary } from "./history-arbitrary.ts";
import { type BodyBudgetPolicy, contextPolicySchema } from "./policy-schema.ts";
import { windowGuardFor } from "./window-guard.ts";

const identity = contextPolicySchema.parse({ policy: "identity" });
/** A 720p camera frame: 1,198 prompt tokens as Qwen-VL counts it, whatever its bytes. */
const frame = Buffer.from(solidColourPng(1280, 720, [40, 90, 160])).toString("base64");
const frameTokens = tokensForPixels(1280, 720);

/** A robot episode as Gemini CLI sends it: one prompt, then `turns` observe calls each with a frame. */
function robotEpisode(turns: number, system = "You drive a robot."): HubRequest {
  return observeHistory(
    [
      { role: "system", content: [{ type: "text", text: system }] },
      {
        role: "user",
        content: [{ type: "text", text: "Observe the scene until you are sure, then finish." }],
      },
    ],
    turns,
    (i) => [
      { type: "text", text: `nonce: ${i}` },
      { type: "image", mediaType: "image/png", data: frame },
    ],
    { model: "qwen", tools: [{ name: "observe", description: "Look", parameters: { type: "object" } }] },
  );
}

describe("the prompt estimate", () => {
  test("an image counts by its pixel size, not its base64 length", () => {
    const one = robotEpisode(1);
    const none = robotEpisode(0);
    const added = estimatePromptTokens(one) - estimatePromptTokens(none);
    // The frame's tokens plus ~4 bytes a token of the call and the result's text.
    expect(added).toBeGreaterThanOrEqual(frameTokens);
    expect(added).toBeLessThan(frameTokens + 100);
    // The byte estimate counts the base64 instead.
    expect(estimateTokens(one) - estimateTokens(none)).toBeGreaterThan(frame.length / 4);
  });

  test("text alone: the same as the byte estimate", () => {
    fc.assert(
      fc.property(hubRequestArbitrary, (request) => {
        const textOnly = {
          ...request,
          messages: request.messages.map((m) =>
            m.role === "user" || m.role === "tool"
              ? { ...m, content: m.content.filter((p) => p.type === "text") }
              : m,
          ),
        } as HubRequest;
        expect(estimatePromptTokens(textOnly)).toBe(estimateTokens(textOnly));
      }),
      { numRuns: 50 },
    );
  });
});

describe("the model's window guards identity", () => {
  const window = windowGuardFor(30720);

  test("under the limit: the very request, the guard recorded as not engaged", () => {
    const request = robotEpisode(5);
    const result = applyContextPolicy(request, identity, undefined, window);
    expect(result.request).toBe(request);
    expect(result.decision.policy).toBe("identity");
    expect(result.decision.reduced).toBe(false);
    expect(result.decision.window).toEqual({
      max_input_tokens: 30720,
      limit_tokens: window.limit,
      target_tokens: window.target,
      prompt_tokens_before: estimatePromptTokens(request),
      prompt_tokens_after: estimatePromptTokens(request),
      engaged: false,
    });
  });

  test("over the limit: the oldest frames become notices, down to the target; recorded", () => {
    const request = robotEpisode(30);
    expect(estimatePromptTokens(request)).toBeGreaterThan(window.limit);
    const result = applyContextPolicy(request, identity, undefined, window);
    const { decision } = result;
    expect(contextDecisionSchema.parse(decision)).toEqual(decision);
    expect(decision.policy).toBe("identity");
    expect(decision.reduced).toBe(true);
    expect(decision.window?.engaged).toBe(true);
    expect(decision.window?.prompt_tokens_after).toBe(estimatePromptTokens(result.request));
    expect(decision.window?.prompt_tokens_after).toBeLessThanOrEqual(window.target);
    // Frames first, in batches of 2, oldest first; the newest 6 always kept; no block removed.
    expect(decision.images_omitted.length % 2).toBe(0);
    expect(decision.images_omitted[0]?.toolCallId).toBe("call_0");
    expect(decision.blocks_removed).toEqual([]);
    // One batch fewer would be over the target: it stops as soon as it gets there.
    expect(decision.window?.prompt_tokens_after).toBeGreaterThan(window.target - 2 * frameTokens);
  });

  test("no guard given: identity sends everything, as before", () => {
    const request = robotEpisode(30);
    const result = applyContextPolicy(request, identity);
    expect(result.request).toBe(request);
    expect(result.decision.window).toBeUndefined();
  });

  test("frames alone cannot fit: the oldest blocks go whole", () => {
    // A 6K window holds fewer than the 6 newest frames that are never omitted.
    const small = windowGuardFor(6144);
    const result = applyContextPolicy(robotEpisode(12), identity, undefined, small);
    expect(result.decision.blocks_removed.length).toBeGreaterThan(0);
    expect(estimatePromptTokens(result.request)).toBeLessThanOrEqual(small.limit);
  });

  test("protected content over the model's window: request_too_large naming the window, policy identity", () => {
    const big = robotEpisode(3, "x".repeat(4 * 40_000));
    try {
      applyContextPolicy(big, identity, undefined, window);
      throw new Error("no error");
    } catch (error) {
      expect(error).toBeInstanceOf(ContextPolicyError);
      const failure = error as ContextPolicyError;
      expect(failure.kind).toBe("request_too_large");
      expect(failure.message).toContain("the model's window");
      expect(failure.message).toContain("max_input_tokens 30720");
      expect(failure.decision.policy).toBe("identity");
    }
  });

  test("a growing episode: every turn under the limit, the reduction kept between low-water refills", () => {
    const memory = createContextMemory();
    const cuts: string[] = [];
    for (let turns = 1; turns <= 80; turns++) {
      const result = applyContextPolicy(robotEpisode(turns), identity, memory.previous, window);
      if (result.cut) memory.previous = result.cut;
      expect(estimatePromptTokens(result.request)).toBeLessThanOrEqual(window.limit);
      if (result.decision.reduced) cuts.push(result.cut?.anchor ?? "");
    }
    const fresh = cuts.filter((cut, i) => i === 0 || cut !== cuts[i - 1]).length;
    // ~(limit − target) / frame tokens turns only append between two reductions.
    expect(cuts.length).toBeGreaterThan(40);
    expect(fresh).toBeLessThan(cuts.length / 3);
  });
});

describe("the model's window guards sliding_window too", () => {
  test("a sliding_window whose own thresholds are far above the model's window still fits it", () => {
    const policy = contextPolicySchema.parse({ policy: "sliding_window" });
    const window = windowGuardFor(30720);
    const result = applyContextPolicy(robotEpisode(40), policy, undefined, window);
    expect(result.decision.policy).toBe("sliding_window");
    expect(result.decision.window?.engaged).toBe(true);
    expect(estimatePromptTokens(result.request)).toBeLessThanOrEqual(window.target);
  });

  test("property: with the guard, the result is always under the limit or a request_too_large", () => {
    fc.assert(
      fc.property(hubRequestArbitrary, fc.integer({ min: 200, max: 40_000 }), (request, maxInput) => {
        const window = windowGuardFor(maxInput);
        const policy = contextPolicySchema.parse({ policy: "sliding_window" });
        for (const chosen of [identity, policy]) {
          try {
            const result = applyContextPolicy(request, chosen, undefined, window);
            expect(estimatePromptTokens(result.request)).toBeLessThanOrEqual(window.limit);
            expect(result.decision.window?.prompt_tokens_after).toBe(estimatePromptTokens(result.request));
          } catch (error) {
            expect(error).toBeInstanceOf(ContextPolicyError);
          }
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe("the model's window guards body_budget too", () => {
  const budget = contextPolicySchema.parse({ policy: "body_budget" }) as BodyBudgetPolicy;
  /** The hub JSON stands in for the upstream body (every image sized). */
  const run = (request: HubRequest, window = windowGuardFor(30720), previous?: ContextCut) =>
    applyBodyBudget(request, budget, applyContextPolicy(request, budget).decision, {
      providerLimitBytes: 6 * 1024 * 1024,
      body: {
        measure: (messages) => ({
          bytes: Buffer.byteLength(JSON.stringify({ ...request, messages })),
          unknown: [],
        }),
      },
      resolve: () => Promise.reject(new Error("every image is sized")),
      previous,
      window,
    });

  test("frames far under the byte budget but over the model's window: reduced to the window's target", async () => {
    const request = robotEpisode(40);
    expect(Buffer.byteLength(JSON.stringify(request))).toBeLessThan(6 * 1024 * 1024 * 0.6);
    const { request: out, decision } = await run(request);
    expect(decision.policy).toBe("body_budget");
    expect(decision.reduced).toBe(true);
    expect(decision.window?.engaged).toBe(true);
    expect(decision.window?.prompt_tokens_after).toBe(estimatePromptTokens(out));
    expect(estimatePromptTokens(out)).toBeLessThanOrEqual(windowGuardFor(30720).target);
    expect(contextDecisionSchema.parse(decision)).toEqual(decision);
  });

  test("under the window and the budget: unchanged, the guard recorded", async () => {
    const request = robotEpisode(4);
    const { request: out, decision } = await run(request);
    expect(out).toBe(request);
    expect(decision.window?.engaged).toBe(false);
  });

  test("a growing episode keeps its reduction between refills, every turn under the window", async () => {
    let previous: ContextCut | undefined;
    let fresh = 0;
    for (let turns = 1; turns <= 60; turns++) {
      const result = await run(robotEpisode(turns), undefined, previous);
      expect(estimatePromptTokens(result.request)).toBeLessThanOrEqual(windowGuardFor(30720).limit);
      if (result.decision.reduced && !result.decision.body_budget?.kept_previous) fresh += 1;
      previous = result.cut;
    }
    expect(fresh).toBeGreaterThan(0);
    expect(fresh).toBeLessThan(15);
  });

  test("protected content over the window: request_too_large naming it", async () => {
    await expect(run(robotEpisode(3, "x".repeat(4 * 40_000)))).rejects.toThrow("the model's window");
  });
});

describe("the window guard turn after turn (generated histories)", () => {
  test("every prompt under the limit; a kept reduction only appends (the prefix stays cacheable)", () => {
    let kept = 0;
    fc.assert(
      fc.property(
        fc.array(segmentArbitrary, { minLength: 5, maxLength: 30 }),
        fc.double({ min: 0.2, max: 1.2, noNaN: true }),
        (segments, share) => {
          const turns = segments.map(
            (_, k): HubRequest => ({
              model: "m",
              messages: buildHistory(segments.slice(0, k + 1), "system"),
              tools: [],
              ignored: [],
            }),
          );
          const window = windowGuardFor(
            Math.max(10, Math.round(estimatePromptTokens(turns.at(-1) as HubRequest) * share)),
          );
          const memory = createContextMemory();
          let before: { messages: HubMessage[]; anchor: string } | undefined;
          for (const request of turns) {
            let result: ReturnType<typeof applyContextPolicy>;
            try {
              result = applyContextPolicy(request, identity, memory.previous, window);
            } catch (error) {
              expect(error).toBeInstanceOf(ContextPolicyError);
              before = undefined;
              continue;
            }
            if (result.cut) memory.previous = result.cut;
            const prompt = estimatePromptTokens(result.request);
            expect(result.decision.window?.prompt_tokens_after).toBe(prompt);
            expect(prompt).toBeLessThanOrEqual(window.limit);
            const anchor = result.cut?.anchor ?? "";
            const sameCut = result.decision.reduced && before !== undefined && before.anchor === anchor;
            if (sameCut && before) {
              kept += 1;
              // The provider's cache can serve the prefix: the messages sent before come first, unchanged.
              expect(result.request.messages.slice(0, before.messages.length)).toEqual(before.messages);
            }
            before = result.decision.reduced ? { messages: result.request.messages, anchor } : undefined;
          }
        },
      ),
      { numRuns: 100 },
    );
    // The generated cases do keep reductions (the check above ran).
    expect(kept).toBeGreaterThan(0);
  });
});
