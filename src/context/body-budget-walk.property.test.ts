/**
 * body_budget's walk takes shortcuts (the block steps are skipped when the step with no
 * block removed fits), so it is held here to the plain definition, over random growing
 * histories: every candidate built and rendered (the real upstream body, the real prompt
 * estimate), the previous reduction if it still fits, else the fewest steps from which
 * every more reduced one fits, then more batches while above the low-water mark or the
 * window's target. The same reduction, the same messages, the same bytes; images whose
 * size is known only once converted give the same answer as images sized from the start.
 * With the episode's message keys and memos (what was measured of a resent message kept by
 * its key), over histories made afresh each turn as a translation makes them and edited at
 * random between turns, the answers are the same: nothing measured of a message is reused
 * for a message that differs from it.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { HubImagePart, HubMessage, HubRequest } from "../hub/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import { createFrozenMemos, type FrozenMemos } from "../lib/frozen-memos.ts";
import { buildChatRequest } from "../upstream/build-chat-request.ts";
import { createChatBodySizer } from "../upstream/chat-body-size.ts";
import { applyBodyBudget } from "./apply-body-budget.ts";
import { applyContextPolicy } from "./apply-context.ts";
import { listToolImages } from "./apply-sliding-window.ts";
import { type ContextCut, cutAt } from "./context-cut.ts";
import { estimatePromptTokens } from "./estimate.ts";
import { findToolBlocks } from "./find-tool-blocks.ts";
import { buildHistory, segmentArbitrary } from "./history-arbitrary.ts";
import { createMessageKeys, type MessageKeys } from "./message-keys.ts";
import { createOmissionNotice } from "./omission-notice.ts";
import { type BodyBudgetPolicy, bodyBudgetPolicySchema } from "./policy-schema.ts";
import { type WindowGuard, windowGuardFor } from "./window-guard.ts";

const cpuBoundTimeoutMs = 60_000;
const target = { model: "qwen3-vl-plus", imageInput: true, parallelToolCalls: true };
const tools = [{ name: "capture_image", description: "Take a picture", parameters: { type: "object" } }];
const requestOf = (messages: HubMessage[]): HubRequest => ({ model: "m", messages, tools, ignored: [] });
const rendered = (messages: HubMessage[]) =>
  Buffer.byteLength(JSON.stringify(buildChatRequest(requestOf(messages), target)));

type Candidate = { omitted: number; removed: number };

/** A candidate's messages, built from its definition: the oldest blocks out, the oldest tool images as notices. */
function candidateMessages(messages: readonly HubMessage[], { omitted, removed }: Candidate): HubMessage[] {
  const images = listToolImages(messages);
  const gone = new Set(
    findToolBlocks(messages)
      .slice(0, removed)
      .flatMap((block) => block.messageIndexes),
  );
  const noticed = new Map<number, Set<number>>();
  for (const image of images.slice(0, omitted)) {
    const parts = noticed.get(image.messageIndex) ?? new Set<number>();
    parts.add(image.partIndex);
    noticed.set(image.messageIndex, parts);
  }
  return messages.flatMap((message, i) => {
    if (gone.has(i)) return [];
    const parts = noticed.get(i);
    if (parts === undefined || message.role !== "tool") return [message];
    let number = 0;
    const content = message.content.map((part, p) => {
      if (part.type !== "image") return part;
      number += 1;
      return parts.has(p) ? createOmissionNotice(message.toolCallId, number) : part;
    });
    return [{ ...message, content }];
  });
}

type Expected =
  | { kind: "too_large" }
  | { kind: "chosen"; candidate: Candidate; keptPrevious: boolean; messages: HubMessage[]; bytes: number };

/** The answer by definition: every candidate tried in the walk's order, rendered in full. */
function expectedAnswer(
  request: HubRequest,
  policy: BodyBudgetPolicy,
  limit: number,
  previous: ContextCut | undefined,
  window: WindowGuard | undefined,
): Expected {
  const messages = request.messages;
  const images = listToolImages(messages);
  const blocks = findToolBlocks(messages);
  const budget = Math.min(policy.max_body_bytes ?? limit, limit);
  const lowWater = Math.floor(budget * policy.low_water_fraction);
  const batch = policy.image_eviction_batch_size;
  const batches = Math.floor(Math.max(0, images.length - policy.min_recent_tool_images) / batch);
  const removable = Math.max(0, blocks.length - policy.keep_recent_blocks);
  const at = (step: number): Candidate => ({
    omitted: Math.min(step, batches) * batch,
    removed: Math.max(0, step - batches),
  });
  const bytesOf = (c: Candidate) => rendered(candidateMessages(messages, c));
  const tokensOf = (c: Candidate) => estimatePromptTokens(requestOf(candidateMessages(messages, c)));
  const fits = (c: Candidate) =>
    bytesOf(c) <= budget && (window === undefined || tokensOf(c) <= window.limit);
  const chosen = (candidate: Candidate, keptPrevious: boolean): Expected => ({
    kind: "chosen",
    candidate,
    keptPrevious,
    messages: candidateMessages(messages, candidate),
    bytes: bytesOf(candidate),
  });
  const usable =
    previous !== undefined &&
    previous.omitted % batch === 0 &&
    previous.omitted <= batches * batch &&
    previous.removed <= removable &&
    cutAt(messages, images, blocks, previous).anchor === previous.anchor;
  const first = usable
    ? { omitted: previous.omitted, removed: previous.removed }
    : { omitted: 0, removed: 0 };
  if (fits(first)) return chosen(first, true);
  const last = batches + removable;
  if (!fits(at(last))) return { kind: "too_large" };
  let step = last;
  while (step > 0 && fits(at(step - 1))) step -= 1;
  const overTarget = (s: number) =>
    bytesOf(at(s)) > lowWater || (window !== undefined && tokensOf(at(s)) > window.target);
  while (step < batches && overTarget(step) && fits(at(step + 1))) step += 1;
  return chosen(at(step), false);
}

const growing = fc
  .record({
    segments: fc.array(segmentArbitrary, { minLength: 3, maxLength: 24 }),
    budgetShare: fc.double({ min: 0.05, max: 1.1, noNaN: true }),
    windowShare: fc.option(fc.double({ min: 0.1, max: 1.5, noNaN: true }), { nil: undefined }),
    knownShare: fc.double({ min: 0, max: 1, noNaN: true }),
    low_water_fraction: fc.double({ min: 0.3, max: 1, noNaN: true }),
    min_recent_tool_images: fc.integer({ min: 0, max: 4 }),
    image_eviction_batch_size: fc.integer({ min: 1, max: 3 }),
    keep_recent_blocks: fc.integer({ min: 1, max: 3 }),
  })
  .map(({ segments, budgetShare, windowShare, knownShare, ...settings }) => {
    const turns = segments.map((_, k) => requestOf(buildHistory(segments.slice(0, k + 1), null)));
    const final = turns.at(-1) as HubRequest;
    const policy = bodyBudgetPolicySchema.parse({
      policy: "body_budget",
      max_body_bytes: Math.max(100, Math.round(rendered(final.messages) * budgetShare)),
      ...settings,
    });
    const window =
      windowShare === undefined
        ? undefined
        : windowGuardFor(Math.max(10, Math.round(estimatePromptTokens(final) * windowShare)));
    return { turns, policy, window, knownShare };
  });

/** An edit of one message of one turn's history (the next turn resends it as it was). */
type Edit = { turn: number; at: number; kind: number };

/** The message at `at` (a share of the history) changed in one of four ways; ids and roles stay. */
function edited(messages: HubMessage[], { at, kind }: Edit): HubMessage[] {
  const index = Math.min(messages.length - 1, Math.floor(at * messages.length));
  const message = messages[index];
  if (message === undefined) return messages;
  const copy = messages.slice();
  if (message.role === "assistant")
    copy[index] = { ...message, text: `${message.text ?? ""}${"x".repeat(kind + 1)}` };
  else {
    const content = message.content.slice();
    const last = content.length - 1;
    const part = content[last];
    if (kind === 0 || part === undefined) content.push({ type: "text", text: "edited" });
    else if (kind === 1) content.pop();
    else if (part.type === "image")
      content[last] =
        kind === 2 ? { ...part, data: `${part.data}`.slice(1) } : { ...part, mediaType: "image/webp+test" };
    else content[last] = { ...part, text: `${part.text}!` };
    copy[index] = { ...message, content } as HubMessage;
  }
  return copy;
}

/** Each turn's answer held to the definition; `episode`: the keys and memos an episode keeps across its turns. */
async function holdsEachTurn(
  turns: HubRequest[],
  policy: BodyBudgetPolicy,
  window: WindowGuard | undefined,
  knownShare: number,
  episode?: { messageKeys: MessageKeys; memos: FrozenMemos },
): Promise<void> {
  let previous: ContextCut | undefined;
  for (const request of turns) {
    // Some images sized from the start (a cached WebP), the others only once converted.
    const converted = new Set<HubImagePart>();
    const images = request.messages.flatMap((m) =>
      m.role === "tool" || m.role === "user"
        ? m.content.filter((p): p is HubImagePart => p.type === "image")
        : [],
    );
    images.forEach((image, i) => {
      if (i < images.length * knownShare) converted.add(image);
    });
    const sizer = createChatBodySizer(
      request,
      target,
      (part) => ({
        mediaType: part.mediaType,
        dataBytes: converted.has(part) ? part.data.length : undefined,
      }),
      episode?.memos,
    );
    const expected = expectedAnswer(request, policy, 10_000_000, previous, window);
    const keys = episode?.messageKeys.keysOf(request.messages);
    const { decision } = applyContextPolicy(
      request,
      policy,
      undefined,
      undefined,
      episode?.memos,
      undefined,
      keys,
    );
    // The estimate with kept sizes is the one made afresh.
    expect(decision.estimate_before).toBe(applyContextPolicy(request, policy).decision.estimate_before);
    const result = await applyBodyBudget(request, policy, decision, {
      providerLimitBytes: 10_000_000,
      body: sizer,
      resolve: async (parts) => {
        for (const part of parts) converted.add(part);
      },
      previous,
      window,
      ...(episode ? { memos: episode.memos, keys } : {}),
    }).catch((error: unknown) => {
      if (error instanceof SidecarError && error.kind === "request_too_large") return undefined;
      throw error;
    });
    if (expected.kind === "too_large") {
      expect(result).toBeUndefined();
      previous = undefined;
      continue;
    }
    expect(result).toBeDefined();
    if (result === undefined) return;
    expect(result.decision.images_omitted.length).toBe(expected.candidate.omitted);
    expect(result.decision.blocks_removed.length).toBe(expected.candidate.removed);
    expect(result.decision.body_budget?.kept_previous).toBe(expected.keptPrevious);
    expect(result.request.messages).toEqual(expected.messages);
    expect(result.decision.body_budget?.bytes_after).toBe(expected.bytes);
    expect(rendered(result.request.messages)).toBe(expected.bytes);
    previous = result.cut;
  }
}

describe("body_budget's walk", () => {
  test(
    "gives the answer of trying every candidate in order, turn after turn, whether images are sized at once or only when converted",
    async () => {
      await fc.assert(
        fc.asyncProperty(growing, async ({ turns, policy, window, knownShare }) => {
          await holdsEachTurn(turns, policy, window, knownShare);
        }),
        { numRuns: 150 },
      );
    },
    cpuBoundTimeoutMs,
  );

  test(
    "gives the same answers with the episode's message keys, over histories made afresh and edited between turns",
    async () => {
      const edits = fc.array(
        fc.record({
          turn: fc.nat({ max: 23 }),
          at: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
          kind: fc.integer({ min: 0, max: 3 }),
        }),
        { maxLength: 8 },
      );
      await fc.assert(
        fc.asyncProperty(growing, edits, async ({ turns, policy, window, knownShare }, changes: Edit[]) => {
          const changed = turns.map((request, k) => ({
            ...request,
            messages: changes.filter((edit) => edit.turn === k).reduce(edited, request.messages),
          }));
          await holdsEachTurn(changed, policy, window, knownShare, {
            messageKeys: createMessageKeys(),
            memos: createFrozenMemos(),
          });
        }),
        { numRuns: 150 },
      );
    },
    cpuBoundTimeoutMs,
  );
});
