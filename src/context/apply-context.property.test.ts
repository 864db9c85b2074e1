/**
 * Properties of the context stage over generated valid histories (see
 * history-arbitrary.ts) and generated sliding_window settings.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { HubMessage, HubRequest } from "../hub/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import { applyContextPolicy, type ContextResult } from "./apply-context.ts";
import { estimateTokens } from "./estimate.ts";
import { findToolBlocks } from "./find-tool-blocks.ts";
import { hubRequestArbitrary } from "./history-arbitrary.ts";
import { type SlidingWindowPolicy, slidingWindowPolicySchema } from "./policy-schema.ts";
import { validateToolHistory } from "./validate-history.ts";

/** A request and a policy scaled to its size, so every outcome is common. */
const caseArbitrary: fc.Arbitrary<[HubRequest, SlidingWindowPolicy]> = fc
  .tuple(
    hubRequestArbitrary,
    fc.record({
      maxShare: fc.double({ min: 0.5, max: 1.3, noNaN: true }),
      targetShare: fc.double({ min: 0.4, max: 1, noNaN: true }),
      min_recent_tool_images: fc.integer({ min: 0, max: 6 }),
      image_eviction_batch_size: fc.integer({ min: 1, max: 4 }),
      keep_recent_blocks: fc.integer({ min: 1, max: 3 }),
    }),
  )
  .map(([request, { maxShare, targetShare, ...rest }]) => {
    const max = Math.max(1, Math.round(estimateTokens(request) * maxShare));
    const policy = slidingWindowPolicySchema.parse({
      policy: "sliding_window",
      max_input_tokens: max,
      target_input_tokens: Math.max(1, Math.round(max * targetShare)),
      ...rest,
    });
    return [request, policy];
  });

const runs = { numRuns: 300 };

/** The result, or the SidecarError it threw (anything else is rethrown). */
function run(request: HubRequest, policy: SlidingWindowPolicy): ContextResult | SidecarError {
  try {
    return applyContextPolicy(request, policy);
  } catch (error) {
    if (error instanceof SidecarError) return error;
    throw error;
  }
}

const isBlockMessage = (m: HubMessage) =>
  m.role === "tool" || (m.role === "assistant" && m.toolCalls.length > 0);
const toolImages = (messages: readonly HubMessage[]) =>
  messages.flatMap((m) => (m.role === "tool" ? m.content.filter((p) => p.type === "image") : []));

describe("sliding_window over generated histories", () => {
  test("either fits the target (estimate exact) or fails with request_too_large", () => {
    fc.assert(
      fc.property(caseArbitrary, ([request, policy]) => {
        const result = run(request, policy);
        if (result instanceof SidecarError) {
          expect(result.kind).toBe("request_too_large");
          expect(estimateTokens(request)).toBeGreaterThan(policy.max_input_tokens);
          return;
        }
        // The incrementally kept total is the real estimate of the output.
        expect(result.decision.estimate_after).toBe(estimateTokens(result.request));
        expect(result.decision.estimate_before).toBe(estimateTokens(request));
        if (result.decision.estimate_before <= policy.max_input_tokens) {
          expect(result.request).toBe(request);
          expect(result.decision.reduced).toBe(false);
        } else {
          expect(result.decision.estimate_after).toBeLessThanOrEqual(policy.target_input_tokens);
        }
      }),
      runs,
    );
  });

  test("leaves no orphan call or result", () => {
    fc.assert(
      fc.property(caseArbitrary, ([request, policy]) => {
        const result = run(request, policy);
        if (!(result instanceof SidecarError)) validateToolHistory(result.request.messages);
      }),
      runs,
    );
  });

  test("keeps protected content: settings, tools, non-block messages and the newest blocks", () => {
    fc.assert(
      fc.property(caseArbitrary, ([request, policy]) => {
        const result = run(request, policy);
        if (result instanceof SidecarError) return;
        const { messages: outMessages, ...outRest } = result.request;
        const { messages: inMessages, ...inRest } = request;
        expect(outRest).toEqual(inRest);
        expect(result.request.tools).toBe(request.tools);
        // System, user and assistant-text messages: all kept, same objects, same order.
        expect(outMessages.filter((m) => !isBlockMessage(m))).toEqual(
          inMessages.filter((m) => !isBlockMessage(m)),
        );
        const outSet = new Set(outMessages);
        for (const m of inMessages) if (!isBlockMessage(m)) expect(outSet.has(m)).toBe(true);
        // The newest keep_recent_blocks blocks keep every message (tool images may be notices).
        const kept = new Set(outMessages.flatMap((m) => (m.role === "tool" ? [m.toolCallId] : [])));
        const outAssistants = new Set(outMessages);
        for (const block of findToolBlocks(inMessages).slice(-policy.keep_recent_blocks)) {
          expect(outAssistants.has(inMessages[block.messageIndexes[0] ?? -1] as HubMessage)).toBe(true);
          for (const id of block.toolCallIds) expect(kept.has(id)).toBe(true);
        }
      }),
      runs,
    );
  });

  test("changes kept messages only by turning tool images into omission notices", () => {
    fc.assert(
      fc.property(caseArbitrary, ([request, policy]) => {
        const result = run(request, policy);
        if (result instanceof SidecarError) return;
        const inputs = new Set(request.messages);
        const byCallId = new Map(
          request.messages.flatMap((m) => (m.role === "tool" ? [[m.toolCallId, m] as const] : [])),
        );
        for (const message of result.request.messages) {
          if (inputs.has(message)) continue;
          if (message.role !== "tool") throw new Error(`a ${message.role} message was rewritten`);
          const original = byCallId.get(message.toolCallId);
          if (!original) throw new Error("a tool message appeared from nowhere");
          expect(message.content.length).toBe(original.content.length);
          message.content.forEach((part, i) => {
            const before = original.content[i];
            if (part === before) return;
            expect(before?.type).toBe("image");
            expect(
              part.type === "text" &&
                part.text.startsWith("[image omitted by the context policy: tool result "),
            ).toBe(true);
          });
        }
      }),
      runs,
    );
  });

  test("omits the oldest tool images in whole batches, keeping the minimum, before removing oldest blocks", () => {
    fc.assert(
      fc.property(caseArbitrary, ([request, policy]) => {
        const result = run(request, policy);
        if (result instanceof SidecarError) return;
        const { images_omitted, blocks_removed } = result.decision;
        const eligible = toolImages(request.messages).length;
        const evictable =
          Math.floor(
            Math.max(0, eligible - policy.min_recent_tool_images) / policy.image_eviction_batch_size,
          ) * policy.image_eviction_batch_size;
        expect(images_omitted.length % policy.image_eviction_batch_size).toBe(0);
        expect(images_omitted.length).toBeLessThanOrEqual(evictable);
        if (blocks_removed.length > 0) expect(images_omitted.length).toBe(evictable);
        // Oldest first: the omitted images are a prefix of the tool images in history order.
        const order = request.messages.flatMap((m) =>
          m.role === "tool"
            ? m.content.flatMap((p, index) =>
                p.type === "image" ? [{ toolCallId: m.toolCallId, index }] : [],
              )
            : [],
        );
        expect(images_omitted).toEqual(order.slice(0, images_omitted.length));
        // Removed blocks are the oldest ones, never one of the newest keep_recent_blocks.
        const blocks = findToolBlocks(request.messages);
        expect(blocks_removed).toEqual(
          blocks.slice(0, blocks_removed.length).map((b) => ({ toolCallIds: b.toolCallIds })),
        );
        expect(blocks_removed.length).toBeLessThanOrEqual(
          Math.max(0, blocks.length - policy.keep_recent_blocks),
        );
      }),
      runs,
    );
  });

  test("is deterministic", () => {
    fc.assert(
      fc.property(caseArbitrary, ([request, policy]) => {
        const copy = structuredClone(request);
        const first = run(request, policy);
        const second = run(copy, policy);
        expect(request).toEqual(copy); // the input is never mutated
        if (first instanceof SidecarError) {
          expect(second).toBeInstanceOf(SidecarError);
          expect((second as SidecarError).message).toBe(first.message);
        } else {
          expect(second).toEqual(first);
          expect(JSON.stringify(second)).toBe(JSON.stringify(first));
        }
      }),
      runs,
    );
  });
});

/**
 * A history at an earlier turn (cut where no call/result block is split) and the same
 * history later, with a policy scaled to the earlier one so that it is reduced.
 */
const growingArbitrary: fc.Arbitrary<[HubRequest, HubRequest, SlidingWindowPolicy]> = fc
  .tuple(
    hubRequestArbitrary,
    fc.double({ min: 0.2, max: 1, noNaN: true }),
    fc.record({
      maxShare: fc.double({ min: 0.3, max: 0.95, noNaN: true }),
      targetShare: fc.double({ min: 0.4, max: 1, noNaN: true }),
      min_recent_tool_images: fc.integer({ min: 0, max: 6 }),
      image_eviction_batch_size: fc.integer({ min: 1, max: 4 }),
      keep_recent_blocks: fc.integer({ min: 1, max: 3 }),
    }),
  )
  .map(([later, where, { maxShare, targetShare, ...rest }]) => {
    const cuts = later.messages.flatMap((m, i) => (i > 0 && m.role !== "tool" ? [i] : []));
    const cut = cuts[Math.floor(where * cuts.length)] ?? later.messages.length;
    const earlier = { ...later, messages: later.messages.slice(0, cut) };
    const max = Math.max(1, Math.round(estimateTokens(earlier) * maxShare));
    const policy = slidingWindowPolicySchema.parse({
      policy: "sliding_window",
      max_input_tokens: max,
      target_input_tokens: Math.max(1, Math.round(max * targetShare)),
      ...rest,
    });
    return [earlier, later, policy];
  });

describe("sliding_window as the history grows", () => {
  test("a stale image is one it omitted, and no later, longer history sends it", () => {
    let exercised = 0;
    fc.assert(
      fc.property(growingArbitrary, ([earlier, later, policy]) => {
        const before = run(earlier, policy);
        if (before instanceof SidecarError) return;
        // Stale: exactly the client's parts named in images_omitted.
        const byCallId = new Map(
          earlier.messages.flatMap((m) => (m.role === "tool" ? [[m.toolCallId, m] as const] : [])),
        );
        const omitted = before.decision.images_omitted.map(
          (o) => byCallId.get(o.toolCallId)?.content[o.index],
        );
        expect(before.stale.length).toBe(omitted.length);
        before.stale.forEach((part, i) => {
          expect(part).toBe(omitted[i] as never);
        });
        const after = run(later, policy);
        if (after instanceof SidecarError) return;
        const sent = new Set(after.request.messages.flatMap((m) => (m.role === "tool" ? m.content : [])));
        for (const part of before.stale) expect(sent.has(part)).toBe(false);
        if (before.stale.length > 0 && later.messages.length > earlier.messages.length) exercised++;
      }),
      { numRuns: 500, seed: 7 },
    );
    expect(exercised).toBeGreaterThan(50);
  });
});

describe("identity over generated histories", () => {
  test("returns the identical object and JSON", () => {
    fc.assert(
      fc.property(hubRequestArbitrary, (request) => {
        const json = JSON.stringify(request);
        const result = applyContextPolicy(request, { policy: "identity" });
        expect(result.request).toBe(request);
        expect(JSON.stringify(result.request)).toBe(json);
        expect(result.decision.estimate_after).toBe(result.decision.estimate_before);
      }),
      runs,
    );
  });
});

test("the generated cases exercise every outcome", () => {
  const outcomes = { untouched: 0, imagesOnly: 0, blocks: 0, failed: 0 };
  fc.assert(
    fc.property(caseArbitrary, ([request, policy]) => {
      const result = run(request, policy);
      if (result instanceof SidecarError) outcomes.failed++;
      else if (!result.decision.reduced) outcomes.untouched++;
      else if (result.decision.blocks_removed.length > 0) outcomes.blocks++;
      else outcomes.imagesOnly++;
    }),
    { numRuns: 500, seed: 42 },
  );
  for (const count of Object.values(outcomes)) expect(count).toBeGreaterThan(10);
});
