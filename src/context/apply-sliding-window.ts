/**
 * The sliding_window policy. Above `max_input_tokens` it reduces the request
 * toward `target_input_tokens`, stopping as soon as it gets there:
 * 1. image phase: tool-result images, oldest first, become omission notices in
 *    whole batches of `image_eviction_batch_size`, never touching the newest
 *    `min_recent_tool_images` (user images are never touched);
 * 2. block phase: the oldest call/result blocks are removed whole, never the
 *    newest `keep_recent_blocks`.
 * Everything else — system prompt, tool declarations, generation settings, user
 * messages, assistant text — is protected; if the request is still over target
 * it fails with `request_too_large` (a ContextPolicyError carrying the decision).
 * Kept messages are the same objects; a tool message with omitted images is a
 * copy whose other parts are the same objects.
 *
 * `stale`: the client's image parts the image phase omitted. They are omitted for good:
 * the client's history only grows (same system prompt, tools and settings), and the
 * request of a longer history with k batches omitted is at least as large as this one's
 * with k batches omitted, which for every k below this one's count was over the target;
 * so the longer one omits at least these batches again. Frames left out only with their
 * removed block are not stale: a longer history can make more batches omissible, and
 * their notices may bring it to the target with that block kept (apply-context.test.ts
 * shows one). A client that shortens its history may send a stale frame again; it is
 * then converted again.
 *
 * Cache-stable: the episode's previous reduction (`previous`, context-cut.ts) is kept
 * while the request with it stays at or under `max_input_tokens`, so the history only
 * appends between reductions and the provider's cache can serve its prefix; each
 * reduction goes down to `target_input_tokens` (the low-water mark). The stale images
 * stay stale: a kept reduction omits at least what the last fresh one did.
 *
 * The model's window guard (`window`, window-guard.ts) is a second threshold on the
 * same walk: the request is also reduced when its prompt, as the model counts it (images
 * by pixel size), is over the guard's limit, down to the guard's target; it fails only
 * when even the most reduced prompt is over the limit (the upstream would refuse it).
 * Under `identity` the walk runs with the guard alone (no threshold of its own).
 *
 * Message sizes are measured once and the total is kept incrementally (JSON of
 * the request = JSON without messages + each message + the commas between), so
 * the work is linear in the size of the history.
 */
import type { HubImagePart, HubMessage, HubPart, HubRequest, HubToolMessage } from "../hub/schema.ts";
import { jsonBytesReusingMembers } from "../lib/frozen-json.ts";
import type { FrozenMemos } from "../lib/frozen-memos.ts";
import { jsonStringDataBytes } from "../lib/json-bytes.ts";
import type { TextHold } from "../lib/known-texts.ts";
import { type ContextCut, cutAt } from "./context-cut.ts";
import { ContextPolicyError } from "./context-policy-error.ts";
import type { ContextDecision } from "./decision-schema.ts";
import {
  hasImages,
  measureJsonBytes,
  measureMessageBytes,
  measurePromptBytes,
  partPromptBytes,
  tokensFromBytes,
} from "./estimate.ts";
import { findToolBlocks } from "./find-tool-blocks.ts";
import { createOmissionNotice } from "./omission-notice.ts";
import type { SlidingWindowPolicy } from "./policy-schema.ts";
import { type WindowGuard, windowDecision, windowLimitShare } from "./window-guard.ts";

export interface ToolImage {
  messageIndex: number;
  partIndex: number;
  /** 1-based among the image parts of its tool message. */
  imageNumber: number;
}

/**
 * Expects a history that passed validateToolHistory. `previous`: the episode's previous
 * reduction; while the request with that very reduction is at or under
 * `max_input_tokens` it is kept (the prompt only appends, its prefix stays cacheable);
 * otherwise the request is reduced toward `target_input_tokens` afresh. `window`: the
 * model's window guard, applied on the same walk. `texts`: the request's hold, where a
 * resent frame is known to be base64 (known-texts.ts), so its alphabet is not scanned again.
 */
export function applySlidingWindow(
  request: HubRequest,
  policy: SlidingWindowPolicy,
  previous?: ContextCut,
  window?: WindowGuard,
  memos?: FrozenMemos,
  texts?: TextHold,
): { request: HubRequest; decision: ContextDecision; stale: HubImagePart[]; cut: ContextCut } {
  const messages = request.messages;
  // A repeated tool list (frozen) is measured once per episode.
  const baseBytes = jsonBytesReusingMembers({ ...request, messages: [] }, memos);
  const messageBytes = messages.map((message) => measureMessageBytes(message, memos, texts));
  // The prompt's weight per message (images by pixel size), only when the window is guarded;
  // a message without images weighs its JSON, measured just above.
  const promptBytes = window
    ? messages.map((message, i) =>
        hasImages(message) ? measurePromptBytes(message, memos) : (messageBytes[i] as number),
      )
    : [];
  const images = listToolImages(messages);
  const blocks = findToolBlocks(messages);
  const sumBefore = messageBytes.reduce((sum, bytes) => sum + bytes, 0);
  const promptSumBefore = promptBytes.reduce((sum, bytes) => sum + bytes, 0);
  const commas = Math.max(0, messages.length - 1);
  const estimateBefore = tokensFromBytes(baseBytes + sumBefore + commas);
  const promptBefore = tokensFromBytes(baseBytes + promptSumBefore + commas);
  const fits = (estimate: number, prompt: number) =>
    estimate <= policy.max_input_tokens && (window === undefined || prompt <= window.limit);
  const windowRecord = (after: number, engaged: boolean) =>
    windowDecision(window, { before: promptBefore, after, engaged });
  const unchanged = {
    request,
    decision: {
      policy: "sliding_window" as const,
      estimate_before: estimateBefore,
      estimate_after: estimateBefore,
      reduced: false,
      images_omitted: [],
      blocks_removed: [],
      ...windowRecord(promptBefore, false),
    } as ContextDecision,
    stale: [],
    cut: cutAt(messages, images, blocks, { omitted: 0, removed: 0 }),
  };
  if (fits(estimateBefore, promptBefore)) return unchanged;
  const evictable =
    Math.floor(
      Math.max(0, images.length - policy.min_recent_tool_images) / policy.image_eviction_batch_size,
    ) * policy.image_eviction_batch_size;
  const removable = Math.max(0, blocks.length - policy.keep_recent_blocks);
  const replay =
    previous !== undefined &&
    (previous.omitted > 0 || previous.removed > 0) &&
    previous.omitted <= evictable &&
    previous.omitted % policy.image_eviction_batch_size === 0 &&
    previous.removed <= removable &&
    cutAt(messages, images, blocks, previous).anchor === previous.anchor
      ? previous
      : undefined;
  if (replay) {
    const kept = reduce({ images: replay.omitted, blocks: replay.removed });
    if (fits(kept.decision.estimate_after, kept.decision.window?.prompt_tokens_after ?? 0)) return kept;
  }
  return reduce(undefined);

  /** Omits and removes the given numbers, or (none given) as few as bring it to the target. */
  function reduce(counts: { images: number; blocks: number } | undefined) {
    const sizes = [...messageBytes];
    const weights = [...promptBytes];
    let messageBytesSum = sumBefore;
    let promptSum = promptSumBefore;
    let messageCount = messages.length;
    const estimate = () => tokensFromBytes(baseBytes + messageBytesSum + Math.max(0, messageCount - 1));
    const prompt = () => tokensFromBytes(baseBytes + promptSum + Math.max(0, messageCount - 1));
    const overTarget = () =>
      estimate() > policy.target_input_tokens || (window !== undefined && prompt() > window.target);
    const decision: ContextDecision = { ...unchanged.decision, images_omitted: [], blocks_removed: [] };
    const rewritten = new Map<number, HubPart[]>();
    const stale: HubImagePart[] = [];
    const moreImages = (next: number) => (counts ? next < counts.images : overTarget());
    for (let next = 0; next < evictable && moreImages(next); ) {
      for (const end = next + policy.image_eviction_batch_size; next < end; next++) {
        const image = images[next] as ToolImage;
        const message = messages[image.messageIndex] as HubToolMessage;
        let content = rewritten.get(image.messageIndex);
        if (!content) {
          content = [...message.content];
          rewritten.set(image.messageIndex, content);
        }
        stale.push(message.content[image.partIndex] as HubImagePart);
        const notice = createOmissionNotice(message.toolCallId, image.imageNumber);
        const original = content[image.partIndex] as HubPart;
        const noticeBytes = measureJsonBytes(notice);
        const delta = noticeBytes - partBytes(original, texts);
        content[image.partIndex] = notice;
        sizes[image.messageIndex] = (sizes[image.messageIndex] ?? 0) + delta;
        messageBytesSum += delta;
        if (window) {
          const promptDelta = noticeBytes - partPromptBytes(original);
          weights[image.messageIndex] = (weights[image.messageIndex] ?? 0) + promptDelta;
          promptSum += promptDelta;
        }
        decision.images_omitted.push({ toolCallId: message.toolCallId, index: image.partIndex });
      }
    }

    const removed = new Uint8Array(messages.length);
    const moreBlocks = (b: number) => (counts ? b < counts.blocks : overTarget());
    for (let b = 0; b < removable && moreBlocks(b); b++) {
      const block = blocks[b];
      if (!block) break;
      for (const index of block.messageIndexes) {
        removed[index] = 1;
        messageBytesSum -= sizes[index] ?? 0;
        if (window) promptSum -= weights[index] ?? 0;
        messageCount--;
      }
      decision.blocks_removed.push({ toolCallIds: block.toolCallIds });
    }

    decision.estimate_after = estimate();
    const promptAfter = prompt();
    Object.assign(decision, windowRecord(promptAfter, window !== undefined && promptBefore > window.limit));
    if (counts === undefined && window !== undefined && promptAfter > window.limit) {
      throw new ContextPolicyError(
        `the model's window: the prompt is still ~${promptAfter} tokens (images by pixel size) after ` +
          `omitting ${decision.images_omitted.length} tool-result images and removing ` +
          `${decision.blocks_removed.length} call/result blocks, over ${window.limit} ` +
          `(${Math.round(windowLimitShare * 100)}% of the model's max_input_tokens ${window.maxInputTokens}; ` +
          `from ~${promptBefore}); the rest is protected: system prompt, tool declarations, user messages, ` +
          `assistant text, the last ${policy.keep_recent_blocks} blocks and the ${policy.min_recent_tool_images} ` +
          "most recent tool images",
        decision,
      );
    }
    if (counts === undefined && estimate() > policy.target_input_tokens) {
      throw new ContextPolicyError(
        `context policy sliding_window: the request is still ~${decision.estimate_after} tokens ` +
          `after omitting ${decision.images_omitted.length} tool-result images and removing ` +
          `${decision.blocks_removed.length} call/result blocks, over target_input_tokens ` +
          `${policy.target_input_tokens} (from ~${estimateBefore}); the rest is protected: system prompt, ` +
          `tool declarations, user messages, assistant text, the last ${policy.keep_recent_blocks} blocks ` +
          `and the ${policy.min_recent_tool_images} most recent tool images`,
        decision,
      );
    }
    decision.reduced = true;
    const kept: HubMessage[] = [];
    messages.forEach((message, i) => {
      if (removed[i]) return;
      const content = rewritten.get(i);
      kept.push(content && message.role === "tool" ? { ...message, content } : message);
    });
    const cut = cutAt(messages, images, blocks, {
      omitted: decision.images_omitted.length,
      removed: decision.blocks_removed.length,
    });
    return { request: { ...request, messages: kept }, decision, stale, cut };
  }
}

/** Every image part inside a tool message, oldest first. */
/**
 * A content part's JSON bytes; an image's data counted by its escaped length, not
 * serialised (a frame is megabytes of base64, known to need no escaping once seen).
 */
function partBytes(part: HubPart, texts: TextHold | undefined): number {
  if (part.type !== "image") return measureJsonBytes(part);
  return measureJsonBytes({ ...part, data: "" }) + jsonStringDataBytes(part.data, texts);
}

export function listToolImages(messages: readonly HubMessage[]): ToolImage[] {
  const images: ToolImage[] = [];
  messages.forEach((message, messageIndex) => {
    if (message.role !== "tool") return;
    let imageNumber = 0;
    message.content.forEach((part, partIndex) => {
      if (part.type === "image") images.push({ messageIndex, partIndex, imageNumber: ++imageNumber });
    });
  });
  return images;
}
