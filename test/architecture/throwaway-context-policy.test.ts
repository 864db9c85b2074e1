/**
 * The "add a context policy" walkthrough of docs/architecture.md, followed once by a
 * reader new to the code and kept as a test so it stays true. The throwaway policy,
 * `recent_images`, sends only the newest `keep_images` tool-result images and leaves
 * omission notices for the rest; then it keeps the model's window as every policy must
 * (step 3): identity is the window guard alone, so the policy hands its reduced request
 * to applyContextPolicy with identity and takes the guard's decision into its own.
 * Steps 1, 2 and 4 (its settings in contextPolicySchema's union, its name in the
 * decision's enum, its case in applyContextPolicy) are edits of closed production unions
 * a throwaway cannot make: its settings schema stands alone here, its name is cast to the
 * decision's, and it is driven through a whole exchange by the context stage of
 * test/support/staged-pipeline.ts instead of by an episode's `context`.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { applyContextPolicy, type ContextResult } from "../../src/context/apply-context.ts";
import type { ContextCut } from "../../src/context/context-cut.ts";
import { ContextPolicyError } from "../../src/context/context-policy-error.ts";
import type { ContextDecision } from "../../src/context/decision-schema.ts";
import { estimateTokens } from "../../src/context/estimate.ts";
import { createOmissionNotice } from "../../src/context/omission-notice.ts";
import { validateToolHistory } from "../../src/context/validate-history.ts";
import { type WindowGuard, windowGuardFor } from "../../src/context/window-guard.ts";
import type { HubImagePart, HubMessage, HubPart, HubRequest } from "../../src/hub/schema.ts";
import { solidColourPng } from "../../src/images/generate-png.ts";
import type { FrozenMemos } from "../../src/lib/frozen-memos.ts";
import { readExchangeLine } from "../../src/records/exchange-lines.ts";
import { records } from "../support/episode-evidence.ts";
import { createInProcessSidecar, postJson } from "../support/in-process-sidecar.ts";
import { observeHistory } from "../support/observe-history.ts";
import { changedPipelineGroup, contextStageOf } from "../support/staged-pipeline.ts";

// Step 1, its settings: strict, with defaults (in production, one more member of contextPolicySchema's union).
const recentImagesPolicySchema = z.strictObject({
  policy: z.literal("recent_images"),
  keep_images: z.number().int().nonnegative().default(1),
});
type RecentImagesPolicy = z.infer<typeof recentImagesPolicySchema>;

// Step 2, its decision: the name needs a place in contextDecisionSchema's `policy` enum.
const recentImages = "recent_images" as ContextDecision["policy"];

// Step 3, the function: pure and deterministic, the very request when nothing changes.
function applyRecentImages(
  request: HubRequest,
  policy: RecentImagesPolicy,
  previous?: ContextCut,
  window?: WindowGuard,
  memos?: FrozenMemos,
): ContextResult {
  // applyContextPolicy validates the history before it dispatches; a policy called alone does it here.
  validateToolHistory(request.messages);
  const omitted: { toolCallId: string; index: number }[] = [];
  const stale: HubImagePart[] = [];
  let kept = 0;
  const messages = [...request.messages];
  for (let m = messages.length - 1; m >= 0; m--) {
    const message = messages[m] as HubMessage;
    if (message.role !== "tool") continue;
    let content: HubPart[] | undefined;
    let imageNumber = message.content.filter((part) => part.type === "image").length;
    for (let p = message.content.length - 1; p >= 0; p--) {
      const part = message.content[p] as HubPart;
      if (part.type !== "image") continue;
      if (kept++ < policy.keep_images) {
        imageNumber--;
        continue;
      }
      content ??= [...message.content];
      content[p] = createOmissionNotice(message.toolCallId, imageNumber--);
      omitted.unshift({ toolCallId: message.toolCallId, index: p });
      stale.unshift(part);
    }
    if (content) messages[m] = { ...message, content };
  }
  const reduced = omitted.length === 0 ? request : { ...request, messages };
  const own: ContextDecision = {
    policy: recentImages,
    estimate_before: estimateTokens(request, memos),
    estimate_after: estimateTokens(reduced, memos),
    reduced: omitted.length > 0,
    images_omitted: omitted,
    blocks_removed: [],
  };
  if (window === undefined) return { request: reduced, decision: own, stale };
  // The model's window, kept as every policy keeps it: identity is the guard alone.
  try {
    const guarded = applyContextPolicy(reduced, { policy: "identity" }, previous, window, memos);
    return {
      ...guarded,
      stale: [...stale, ...guarded.stale],
      decision: {
        ...guarded.decision,
        policy: recentImages,
        estimate_before: own.estimate_before,
        reduced: own.reduced || guarded.decision.reduced,
        images_omitted: [...omitted, ...guarded.decision.images_omitted],
      },
    };
  } catch (error) {
    if (error instanceof ContextPolicyError)
      throw new ContextPolicyError(error.message, { ...error.decision, policy: recentImages });
    throw error;
  }
}

const frame = (shade: number) => Buffer.from(solidColourPng(64, 48, [shade, 90, 160])).toString("base64");

/** A prompt, then `frames` observe call/result pairs, each result a note and a frame. */
function history(frames: number, note = "ok"): HubRequest {
  return observeHistory(
    [{ role: "user", content: [{ type: "text", text: "Watch the table." }] }],
    frames,
    (i) => [
      { type: "text", text: note },
      { type: "image", mediaType: "image/png", data: frame(i) },
    ],
    { model: "m" },
  );
}

const imagesLeft = (request: HubRequest) =>
  request.messages.flatMap((m) => (m.role === "tool" ? m.content : [])).filter((p) => p.type === "image");

describe("a throwaway context policy built by the walkthrough (pure)", () => {
  test("its settings: defaults, and a misspelt key refused", () => {
    expect(recentImagesPolicySchema.parse({ policy: "recent_images" })).toEqual({
      policy: "recent_images",
      keep_images: 1,
    });
    expect(recentImagesPolicySchema.safeParse({ policy: "recent_images", keep_image: 2 }).success).toBe(
      false,
    );
  });

  test("nothing to omit: the very request, a decision that says so", () => {
    const request = history(2);
    const result = applyRecentImages(request, { policy: "recent_images", keep_images: 2 });
    expect(result.request).toBe(request);
    expect(result.decision).toMatchObject({ reduced: false, images_omitted: [], blocks_removed: [] });
  });

  test("the oldest images become notices, the newest stay, every call keeps its result", () => {
    const request = history(4);
    const result = applyRecentImages(request, { policy: "recent_images", keep_images: 1 });
    expect(imagesLeft(result.request)).toHaveLength(1);
    expect(result.decision.images_omitted).toEqual(
      ["call_0", "call_1", "call_2"].map((id) => ({ toolCallId: id, index: 1 })),
    );
    expect(result.stale).toHaveLength(3);
    expect(result.request.messages).toHaveLength(request.messages.length);
    expect(() => validateToolHistory(result.request.messages)).not.toThrow();
    const notice = result.request.messages[2];
    expect(notice?.role === "tool" && notice.content[1]).toEqual(createOmissionNotice("call_0", 1));
  });

  test("the model's window: over it after the policy's own reduction, the guard removes the oldest blocks, under the policy's name", () => {
    const request = history(12, "x".repeat(2000));
    const window = windowGuardFor(4000);
    const result = applyRecentImages(request, { policy: "recent_images", keep_images: 1 }, undefined, window);
    expect(result.decision.policy).toBe(recentImages);
    expect(result.decision.window?.engaged).toBe(true);
    expect(result.decision.blocks_removed.length).toBeGreaterThan(0);
    expect(result.decision.window?.prompt_tokens_after).toBeLessThanOrEqual(window.limit);
    expect(result.cut).toBeDefined();
    expect(() => validateToolHistory(result.request.messages)).not.toThrow();
  });
});

describe("a throwaway context policy driven through a whole exchange", () => {
  test("only the newest frame goes upstream; the decision is the exchange's after_context line", async () => {
    const policy = recentImagesPolicySchema.parse({ policy: "recent_images", keep_images: 1 });
    const stage = contextStageOf((request, previous, window, memos) =>
      applyRecentImages(request, policy, previous, window, memos),
    );
    const sidecar = await createInProcessSidecar({
      episodeRoutes: [changedPipelineGroup("policy", { context: stage })],
    });
    try {
      const episode = sidecar.createEpisode({ max_turns: 0 });
      const messages: unknown[] = [{ role: "user", content: "Observe." }];
      for (let i = 0; i < 3; i++)
        messages.push(
          {
            role: "assistant",
            content: [{ type: "tool_use", id: `toolu_${i}`, name: "mcp__ura__observe", input: {} }],
          },
          {
            role: "user",
            content: [
              {
                type: "tool_result",
                tool_use_id: `toolu_${i}`,
                content: [
                  { type: "image", source: { type: "base64", media_type: "image/png", data: frame(i) } },
                ],
              },
            ],
          },
        );
      const tools = ["observe", "record", "finish"].map((name) => ({
        name: `mcp__ura__${name}`,
        input_schema: { type: "object" },
      }));
      const res = await postJson(
        sidecar.app,
        `/e/${episode.id}/policy/v1/messages`,
        { model: "ura-qwen", max_tokens: 1024, messages, tools },
        { "x-api-key": episode.ingressKey },
      );
      expect(res.status).toBe(200);
      await res.json();
      const sent = JSON.stringify(sidecar.scripted.received[0]?.body);
      expect(sent.match(/data:image\/webp;base64,/g)).toHaveLength(1);
      expect(sent).toContain(createOmissionNotice("toolu_0", 1).text);
      expect(sent).toContain(createOmissionNotice("toolu_1", 1).text);
      const after = records(episode.records.dir, "exchanges").find((line) => line.stage === "after_context");
      expect(after?.decision).toMatchObject({
        policy: "recent_images",
        reduced: true,
        images_omitted: [
          { toolCallId: "toolu_0", index: 0 },
          { toolCallId: "toolu_1", index: 0 },
        ],
      });
      expect(after?.translated).toBeDefined();
      // The reduction is the episode's for its next request (cache-stable prefix).
      expect(episode.contextMemory.previous).toBeDefined();
      // The closed enum: the lenient reader does not take a policy it does not name (step 2 opens it).
      expect(readExchangeLine("after_context", after)).toBeUndefined();
    } finally {
      sidecar.stop();
    }
  });
});
