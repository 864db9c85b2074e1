/**
 * The context policies keep the prompt's prefix stable as a history grows turn by turn:
 * properties over generated histories replayed one segment at a time with the episode's
 * memory of the previous reduction (context-cut.ts), and the cache efficiency of a long
 * synthetic camera episode (src/upstream/cache-efficiency.ts).
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { HubImagePart, HubMessage, HubRequest } from "../hub/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import { buildChatRequest } from "../upstream/build-chat-request.ts";
import { measureCacheEfficiency } from "../upstream/cache-efficiency.ts";
import { createChatBodySizer } from "../upstream/chat-body-size.ts";
import { listPromptBlocks, type PromptBlock } from "../upstream/prompt-blocks.ts";
import { applyBodyBudget } from "./apply-body-budget.ts";
import { applyContextPolicy } from "./apply-context.ts";
import { createContextMemory } from "./context-cut.ts";
import { estimateTokens } from "./estimate.ts";
import { buildHistory, segmentArbitrary } from "./history-arbitrary.ts";
import {
  type BodyBudgetPolicy,
  bodyBudgetPolicySchema,
  type SlidingWindowPolicy,
  slidingWindowPolicySchema,
} from "./policy-schema.ts";

/**
 * Hundreds of generated cases of CPU-bound work: seconds alone, several times that on a
 * loaded machine, so the test says its own limit rather than take bun's 5 s default
 * (bunfig.toml cannot set it; only `--timeout` on the command line can).
 */
const cpuBoundTimeoutMs = 60_000;

const target = { model: "qwen3-vl-plus", imageInput: true, parallelToolCalls: true };
const tools = [{ name: "capture_image", description: "Take a picture", parameters: { type: "object" } }];
const requestOf = (messages: HubMessage[]): HubRequest => ({ model: "m", messages, tools, ignored: [] });
/** The upstream body's exact size, every image already in its upstream form. */
const sizerOf = (request: HubRequest) =>
  createChatBodySizer(request, target, (part) => ({
    mediaType: part.mediaType,
    dataBytes: part.data.length,
  }));
const bodyBytes = (request: HubRequest) =>
  Buffer.byteLength(JSON.stringify(buildChatRequest(request, target)));
const toolImages = (messages: readonly HubMessage[]) =>
  messages.flatMap((m) => (m.role === "tool" ? m.content.filter((p) => p.type === "image") : []));
const isPrefix = (before: readonly HubMessage[], after: readonly HubMessage[]) =>
  before.length <= after.length && before.every((m, i) => JSON.stringify(m) === JSON.stringify(after[i]));

/** A growing history (one generated segment per turn) and a body_budget scaled to its final size. */
const growingBodyBudget = fc
  .record({
    system: fc.option(fc.string({ maxLength: 200 }), { nil: null }),
    segments: fc.array(segmentArbitrary, { minLength: 5, maxLength: 30 }),
    budgetShare: fc.double({ min: 0.2, max: 1.1, noNaN: true }),
    low_water_fraction: fc.double({ min: 0.3, max: 1, noNaN: true }),
    min_recent_tool_images: fc.integer({ min: 0, max: 4 }),
    image_eviction_batch_size: fc.integer({ min: 1, max: 3 }),
    keep_recent_blocks: fc.integer({ min: 1, max: 3 }),
  })
  .map(({ system, segments, budgetShare, ...settings }) => {
    const turns = segments.map((_, k) => requestOf(buildHistory(segments.slice(0, k + 1), system)));
    const full = bodyBytes(turns.at(-1) as HubRequest);
    const policy = bodyBudgetPolicySchema.parse({
      policy: "body_budget",
      max_body_bytes: Math.max(100, Math.round(full * budgetShare)),
      ...settings,
    });
    return { turns, policy };
  });

describe("body_budget turn after turn", () => {
  test(
    "under the budget always; the previous reduction kept = the prompt only appends; a new one goes to the low-water mark or as far as allowed; the newest images and user messages stay",
    async () => {
      await fc.assert(
        fc.asyncProperty(growingBodyBudget, async ({ turns, policy }) => {
          const memory = createContextMemory();
          let before: HubMessage[] | undefined;
          for (const request of turns) {
            const { decision } = applyContextPolicy(request, policy);
            const result = await applyBodyBudget(request, policy, decision, {
              providerLimitBytes: 10_000_000,
              body: sizerOf(request),
              resolve: () => Promise.reject(new Error("every image is sized")),
              previous: memory.previous,
            }).catch((error: unknown) => {
              if (error instanceof SidecarError && error.kind === "request_too_large") return undefined;
              throw error;
            });
            if (result === undefined) {
              before = undefined;
              continue;
            }
            memory.previous = result.cut;
            const out = result.request.messages;
            const bytes = bodyBytes(result.request);
            const budget = policy.max_body_bytes as number;
            expect(bytes).toBeLessThanOrEqual(budget);
            expect(result.decision.body_budget?.bytes_after).toBe(bytes);
            if (result.decision.body_budget?.kept_previous && before !== undefined)
              expect(isPrefix(before, out)).toBe(true);
            if (!result.decision.body_budget?.kept_previous && result.decision.reduced) {
              const images = toolImages(request.messages).length;
              const batches = Math.floor(
                Math.max(0, images - policy.min_recent_tool_images) / policy.image_eviction_batch_size,
              );
              const everyBatch =
                result.decision.images_omitted.length === batches * policy.image_eviction_batch_size;
              expect(bytes <= Math.floor(budget * policy.low_water_fraction) || everyBatch).toBe(true);
              // Blocks go only when every omissible frame is a notice.
              if (result.decision.blocks_removed.length > 0) expect(everyBatch).toBe(true);
            }
            // The newest images are never replaced by notices (their block may go whole, as before).
            const images = toolImages(request.messages).length;
            expect(result.decision.images_omitted.length).toBeLessThanOrEqual(
              Math.max(0, images - policy.min_recent_tool_images),
            );
            expect(out.filter((m) => m.role === "user")).toEqual(
              request.messages.filter((m) => m.role === "user"),
            );
            before = out;
          }
        }),
        { numRuns: 120 },
      );
    },
    cpuBoundTimeoutMs,
  );
});

/** A growing history and a sliding_window scaled to its final estimate. */
const growingSlidingWindow = fc
  .record({
    segments: fc.array(segmentArbitrary, { minLength: 5, maxLength: 30 }),
    maxShare: fc.double({ min: 0.2, max: 1.1, noNaN: true }),
    targetShare: fc.double({ min: 0.3, max: 1, noNaN: true }),
    min_recent_tool_images: fc.integer({ min: 0, max: 4 }),
    image_eviction_batch_size: fc.integer({ min: 1, max: 3 }),
    keep_recent_blocks: fc.integer({ min: 1, max: 3 }),
  })
  .map(({ segments, maxShare, targetShare, ...settings }) => {
    const turns = segments.map((_, k) => requestOf(buildHistory(segments.slice(0, k + 1), "system")));
    const max = Math.max(1, Math.round(estimateTokens(turns.at(-1) as HubRequest) * maxShare));
    const policy = slidingWindowPolicySchema.parse({
      policy: "sliding_window",
      max_input_tokens: max,
      target_input_tokens: Math.max(1, Math.round(max * targetShare)),
      ...settings,
    });
    return { turns, policy: policy as SlidingWindowPolicy };
  });

describe("sliding_window turn after turn", () => {
  test(
    "a kept reduction stays under max_input_tokens and the prompt only appends; a new one reaches the target",
    () => {
      fc.assert(
        fc.property(growingSlidingWindow, ({ turns, policy }) => {
          const memory = createContextMemory();
          let before: { messages: HubMessage[]; omitted: number; removed: number } | undefined;
          for (const request of turns) {
            let result: ReturnType<typeof applyContextPolicy>;
            try {
              result = applyContextPolicy(request, policy, memory.previous);
            } catch (error) {
              if (error instanceof SidecarError && error.kind === "request_too_large") {
                before = undefined;
                continue;
              }
              throw error;
            }
            memory.previous = result.cut;
            const { decision } = result;
            expect(decision.estimate_after).toBe(estimateTokens(result.request));
            const sameCut =
              before !== undefined &&
              decision.reduced &&
              decision.images_omitted.length === before.omitted &&
              decision.blocks_removed.length === before.removed;
            if (decision.reduced && !sameCut)
              expect(decision.estimate_after).toBeLessThanOrEqual(policy.target_input_tokens);
            if (decision.reduced)
              expect(decision.estimate_after).toBeLessThanOrEqual(policy.max_input_tokens);
            if (sameCut && before) expect(isPrefix(before.messages, result.request.messages)).toBe(true);
            before = {
              messages: result.request.messages,
              omitted: decision.images_omitted.length,
              removed: decision.blocks_removed.length,
            };
          }
        }),
        { numRuns: 150 },
      );
    },
    cpuBoundTimeoutMs,
  );
});

/**
 * A camera episode at 1/10 scale in bytes (frames of 64,000 base64 characters, a
 * 629,146-byte budget: ~9.7 frames, as 1280×720 frames of ~0.48 MB WebP under 6 MiB), with
 * the prompt's real token weights (an image 1,200 tokens): one call and one frame per turn.
 */
function cameraTurns(turns: number): HubRequest[] {
  const messages: HubMessage[] = [
    { role: "system", content: [{ type: "text", text: "You watch a table through the robot's camera." }] },
    { role: "user", content: [{ type: "text", text: "Observe on every turn." }] },
  ];
  const requests: HubRequest[] = [];
  for (let i = 0; i < turns; i++) {
    const id = `call_${i}`;
    const frame: HubImagePart = {
      type: "image",
      mediaType: "image/webp",
      data: `${String(i).padStart(6, "0")}${"A".repeat(64_000 - 6)}`,
    };
    messages.push(
      { role: "assistant", text: null, toolCalls: [{ id, name: "capture_image", arguments: "{}" }] },
      {
        role: "tool",
        toolCallId: id,
        name: "capture_image",
        content: [{ type: "text", text: `observation ${i}: the front camera frame.` }, frame],
      },
    );
    requests.push(requestOf([...messages]));
  }
  return requests;
}

async function cameraEpisode(policy: BodyBudgetPolicy, turns = 200) {
  const memory = createContextMemory();
  const efficiencies: number[] = [];
  let underBudget = 0;
  let previous: PromptBlock[] | undefined;
  for (const request of cameraTurns(turns)) {
    const { decision } = applyContextPolicy(request, policy);
    const result = await applyBodyBudget(request, policy, decision, {
      providerLimitBytes: 629_146,
      body: sizerOf(request),
      resolve: () => Promise.reject(new Error("every image is sized")),
      previous: memory.previous,
    });
    memory.previous = result.cut;
    if (bodyBytes(result.request) <= 629_146) underBudget += 1;
    const blocks = listPromptBlocks(buildChatRequest(result.request, target));
    if (previous) efficiencies.push(measureCacheEfficiency(previous, blocks).efficiency);
    previous = blocks;
  }
  const mean = efficiencies.reduce((sum, e) => sum + e, 0) / efficiencies.length;
  return { mean, underBudget };
}

describe("cache efficiency of a 200-turn camera episode", () => {
  test(
    "with the default low-water mark ≥ 0.8, every body under the budget; reducing only to the budget each turn (the old rule) far less",
    async () => {
      const policyWith = (extra: object) =>
        bodyBudgetPolicySchema.parse({ policy: "body_budget", ...extra }) as BodyBudgetPolicy;
      const stable = await cameraEpisode(policyWith({}));
      const fewestEachTurn = await cameraEpisode(policyWith({ low_water_fraction: 1 }));
      const oldDefaults = await cameraEpisode(
        policyWith({ low_water_fraction: 1, image_eviction_batch_size: 8 }),
      );
      expect(stable.underBudget).toBe(200);
      expect(fewestEachTurn.underBudget).toBe(200);
      expect(stable.mean).toBeGreaterThanOrEqual(0.8);
      expect(fewestEachTurn.mean).toBeLessThan(0.5);
      expect(oldDefaults.mean).toBeLessThan(stable.mean);
      console.log(
        `cache efficiency, 200 turns: low-water default ${stable.mean.toFixed(3)}; fewest each turn ${fewestEachTurn.mean.toFixed(3)}; old defaults (batches of 8) ${oldDefaults.mean.toFixed(3)}`,
      );
    },
    cpuBoundTimeoutMs,
  );
});
