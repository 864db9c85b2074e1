/**
 * The body_budget policy: keeps the upstream body at or under a byte budget,
 * measured on the request after WebP conversion exactly as it will be sent, so a
 * camera episode that resends every frame keeps running at any length.
 *
 * Over the budget it reduces, like sliding_window but in bytes of the real body:
 * 1. tool-result images, oldest first, become omission notices in whole batches of
 *    `image_eviction_batch_size`, never the newest `min_recent_tool_images`
 *    (user images are never touched);
 * 2. then the oldest call/result blocks go whole, never the newest `keep_recent_blocks`.
 * System prompt, tool declarations, user messages and assistant text are protected;
 * when the body is still over budget it fails with `request_too_large`
 * (a ContextPolicyError carrying the decision).
 *
 * The amount to omit is chosen from a cheap estimate (image base64 lengths plus the
 * JSON of everything else, aimed a margin under the budget); the body actually built
 * is then measured, and one more batch goes whenever it is still over; the fewest
 * blocks still needed are then found in logarithmically many measurements. The
 * caller's `measureBody` is that real measurement (its last body is what gets sent).
 */
import type { HubMessage, HubPart, HubRequest } from "../hub/schema.ts";
import { listToolImages } from "./apply-sliding-window.ts";
import { ContextPolicyError } from "./context-policy-error.ts";
import type { ContextDecision } from "./decision-schema.ts";
import { measureJsonBytes, measureMessageBytes } from "./estimate.ts";
import { findToolBlocks } from "./find-tool-blocks.ts";
import { createOmissionNotice } from "./omission-notice.ts";
import type { BodyBudgetPolicy } from "./policy-schema.ts";

export type BodyBudgetOptions = {
  /** The provider's body limit; the budget is never above it. */
  providerLimitBytes: number;
  /** UTF-8 bytes of the upstream body built from this (converted) hub request. */
  measureBody: (request: HubRequest) => number;
};

/** Estimated bytes of a message in the body: its hub JSON, plus each image's data URL framing. */
function estimateMessageBytes(message: HubMessage): number {
  const images =
    message.role === "user" || message.role === "tool"
      ? message.content.filter((p) => p.type === "image")
      : [];
  return measureMessageBytes(message) + images.length * 48; // "data:…;base64," and the image_url wrapper
}

export function applyBodyBudget(
  request: HubRequest,
  policy: BodyBudgetPolicy,
  decision: ContextDecision,
  options: BodyBudgetOptions,
): { request: HubRequest; decision: ContextDecision } {
  const budget = Math.min(policy.max_body_bytes ?? options.providerLimitBytes, options.providerLimitBytes);
  const messages = request.messages;
  const messageBytes = messages.map(estimateMessageBytes);
  const baseBytes = measureJsonBytes({ ...request, messages: [] });
  const estimateBefore = baseBytes + messageBytes.reduce((sum, bytes) => sum + bytes, 0);
  // Aim under the budget by a margin for what the estimate does not see (the body's own framing).
  const aim = budget - Math.max(1024, Math.ceil(budget * 0.01)) - 64 * messages.length;
  const result = (bytesAfter: number): ContextDecision => ({
    ...decision,
    body_budget: { max_body_bytes: budget, bytes_before: estimateBefore, bytes_after: bytesAfter },
  });

  if (estimateBefore <= aim) {
    const bytes = options.measureBody(request);
    if (bytes <= budget) return { request, decision: result(bytes) };
  }

  const images = listToolImages(messages);
  const batch = policy.image_eviction_batch_size;
  const evictable = Math.floor(Math.max(0, images.length - policy.min_recent_tool_images) / batch) * batch;
  const blocks = findToolBlocks(messages);
  const removable = Math.max(0, blocks.length - policy.keep_recent_blocks);
  const notices = images.map((image) => {
    const message = messages[image.messageIndex] as HubMessage & { toolCallId: string };
    return createOmissionNotice(message.toolCallId, image.imageNumber);
  });
  const imageSaving = (i: number): number => {
    const image = images[i];
    const message = image && messages[image.messageIndex];
    if (!image || message?.role !== "tool") return 0;
    const part = message.content[image.partIndex] as HubPart;
    return estimateMessageBytes({ ...message, content: [part] }) - measureJsonBytes(notices[i]);
  };

  let omitted = 0;
  let removed = 0;
  let estimate = estimateBefore;
  while (omitted < evictable && estimate > aim) {
    for (const end = omitted + batch; omitted < end; omitted++) estimate -= imageSaving(omitted);
  }
  while (removed < removable && estimate > aim) {
    for (const index of blocks[removed]?.messageIndexes ?? []) estimate -= messageBytes[index] ?? 0;
    removed++;
  }

  function build(): { request: HubRequest; decision: ContextDecision["images_omitted"] } {
    const contents = new Map<number, HubPart[]>();
    const omittedList: ContextDecision["images_omitted"] = [];
    for (let i = 0; i < omitted; i++) {
      const image = images[i];
      const message = image && messages[image.messageIndex];
      if (!image || !message || message.role !== "tool") continue;
      const content = contents.get(image.messageIndex) ?? [...message.content];
      content[image.partIndex] = notices[i] as HubPart;
      contents.set(image.messageIndex, content);
      omittedList.push({ toolCallId: message.toolCallId, index: image.partIndex });
    }
    const gone = new Set(blocks.slice(0, removed).flatMap((block) => block.messageIndexes));
    const kept = messages.flatMap((message, i) => {
      if (gone.has(i)) return [];
      const content = contents.get(i);
      return [content && message.role === "tool" ? { ...message, content } : message];
    });
    return { request: { ...request, messages: kept }, decision: omittedList };
  }

  const measure = () => {
    const candidate = build();
    const bytes = options.measureBody(candidate.request);
    const reduced = {
      ...result(bytes),
      reduced: omitted > 0 || removed > 0,
      images_omitted: candidate.decision,
      blocks_removed: blocks.slice(0, removed).map((block) => ({ toolCallIds: block.toolCallIds })),
    };
    return { request: candidate.request, decision: reduced, fits: bytes <= budget, bytes };
  };
  const overBudget = (bytes: number) =>
    new ContextPolicyError(
      `context policy body_budget: the upstream body is still ${bytes} bytes after omitting ` +
        `${omitted} tool-result images and removing ${removed} call/result blocks, over ` +
        `max_body_bytes ${budget} (from ~${estimateBefore}); the rest is protected: system prompt, ` +
        `tool declarations, user messages, assistant text, the last ${policy.keep_recent_blocks} blocks ` +
        `and the ${policy.min_recent_tool_images} most recent tool images`,
      measured.decision,
    );

  let measured = measure();
  while (!measured.fits && omitted < evictable) {
    omitted += batch;
    measured = measure();
  }
  if (measured.fits) return { request: measured.request, decision: measured.decision };
  if (removed >= removable) throw overBudget(measured.bytes);
  // The fewest whole blocks to remove, found without measuring every count: once the
  // images are omitted a block is its text (hundreds of bytes), so stepping one block
  // per measurement built and dropped dozens of multi-MB bodies in one exchange (the
  // peak memory of a long camera episode). Removing a block only shrinks the body,
  // so the first count that fits is found by doubling steps, then halving the gap.
  let tooFew = removed;
  let step = 1;
  for (;;) {
    removed = Math.min(tooFew + step, removable);
    measured = measure();
    if (measured.fits) break;
    if (removed === removable) throw overBudget(measured.bytes);
    tooFew = removed;
    step *= 2;
  }
  let enough = removed;
  let fitting = measured;
  while (enough - tooFew > 1) {
    removed = tooFew + Math.floor((enough - tooFew) / 2);
    measured = measure();
    if (measured.fits) {
      enough = removed;
      fitting = measured;
    } else tooFew = removed;
  }
  // The body measured last is the body sent (the caller keeps the last one it built).
  if (measured !== fitting) {
    removed = enough;
    fitting = measure();
  }
  return { request: fitting.request, decision: fitting.decision };
}
