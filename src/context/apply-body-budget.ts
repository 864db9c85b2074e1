/**
 * The body_budget policy: keeps the upstream body at or under a byte budget,
 * measured on the request exactly as it will be sent (images as their WebP), so a
 * camera episode that resends every frame keeps running at any length.
 *
 * Over the budget it reduces, like sliding_window but in bytes of the real body:
 * 1. tool-result images, oldest first, become omission notices in whole batches of
 *    `image_eviction_batch_size`, never the newest `min_recent_tool_images`
 *    (user images are never touched);
 * 2. then the oldest call/result blocks go whole, never the newest `keep_recent_blocks`.
 * It keeps the prompt's prefix stable (docs/context-policies.md): a request that fits
 * with the episode's previous reduction (`previous`, the same batches omitted and blocks
 * removed, at the same calls) gets exactly that one again, so the history only appends;
 * one that no longer fits takes the fewest batches, then the fewest blocks, that fit the
 * budget, and then, while it is still above the low-water mark (`low_water_fraction` of
 * the budget), more batches (never more blocks), so that several turns can append again
 * before the next reduction. System prompt, tool
 * declarations, user messages and assistant text are protected; when the body is
 * still over budget it fails with `request_too_large` (a ContextPolicyError carrying
 * the decision) naming the client's field of the largest protected item.
 *
 * The candidates form one sequence, each keeping a subset of the previous one's
 * images: no batch omitted, one, …, every evictable batch, then one block removed, two, ….
 * The body only shrinks along it, so the answer is found walking back from the
 * most reduced candidate while the body still fits the target; the block steps are
 * passed over at once when the step with no block removed fits (each keeps a subset of
 * its messages), so a turn measures a handful of candidates, not one per block. Sizes come from `body`, an exact
 * model of the rendered body (nothing is rendered here); an image whose upstream
 * size is not known yet (a PNG not converted) is sized through `resolve` only when
 * the candidate being tried keeps it, newest first, and only until that candidate is
 * known to be over: of the frames the budget drops, only some of the newest batch (to
 * find it over) are ever converted, never older ones.
 *
 * The model's window (`window`, window-guard.ts) is a second constraint on the same walk:
 * a candidate fits only if its prompt, as the model counts it (estimate.ts: images by pixel
 * size, known before any conversion), is at or under the guard's limit, and the low-water
 * step also goes on while the prompt is over the guard's target. Tokens are checked first,
 * so a candidate over the window converts nothing.
 *
 * Given the episode's message keys (message-keys.ts), a resent message verified equal to
 * the one at its place in the previous request keeps what was measured of it and of its
 * copies with notices (its prompt weight, its share of the body), so a turn measures only
 * its new and changed messages; the walk and its answer are the same.
 */
import type { HubImagePart, HubMessage, HubRequest } from "../hub/schema.ts";
import { jsonBytesReusingMembers } from "../lib/frozen-json.ts";
import type { FrozenMemos } from "../lib/frozen-memos.ts";
import { listToolImages } from "./apply-sliding-window.ts";
import { type ContextCut, cutAt } from "./context-cut.ts";
import { ContextPolicyError } from "./context-policy-error.ts";
import type { ContextDecision } from "./decision-schema.ts";
import { measurePromptBytes, tokensFromBytes } from "./estimate.ts";
import { findToolBlocks } from "./find-tool-blocks.ts";
import type { MessageKey } from "./message-keys.ts";
import { createOmissionNotice } from "./omission-notice.ts";
import type { BodyBudgetPolicy } from "./policy-schema.ts";
import { type WindowGuard, windowDecision, windowLimitShare } from "./window-guard.ts";

/**
 * The key a message (or a notice copy) is measured by: the same object for equal messages of
 * the episode's successive requests (message-keys.ts); none, the message itself.
 */
export type MessageKeyOf = (message: HubMessage) => object | undefined;

/** Exact bytes of the upstream body built from a list of the request's messages (or their notice copies). */
export interface BodyMeasure {
  /**
   * `bytes` counts only images of known size; the others are listed in `unknown`, in message order.
   * `keyOf`: what is measured of a message may be kept by its key, across requests.
   */
  measure(messages: readonly HubMessage[], keyOf?: MessageKeyOf): { bytes: number; unknown: HubImagePart[] };
}

export type BodyBudgetOptions = {
  /** The provider's body limit; the budget is never above it. */
  providerLimitBytes: number;
  body: BodyMeasure;
  /** Makes these images' upstream sizes known to `body` (converts them). */
  resolve: (images: HubImagePart[]) => Promise<void>;
  /** The episode's previous reduction: kept while the request still fits with it. */
  previous?: ContextCut;
  /** The episode model's window guard. */
  window?: WindowGuard;
  /** The episode's memos: a repeated system prompt is measured once (frozen-memos.ts). */
  memos?: FrozenMemos;
  /** The request's message keys, by index (the episode's, message-keys.ts): a resent message's measures are kept. */
  keys?: readonly MessageKey[];
};

type Candidate = { omitted: number; removed: number };

export type BodyBudgetResult = {
  request: HubRequest;
  decision: ContextDecision;
  /**
   * The images left out that the episode's later requests leave out too, and need not
   * size again: every omitted image but the newest omitted batch. The history only
   * grows, so every candidate keeping an image of an earlier batch only gets larger
   * and stays over the budget; the newest omitted batch is what the next decision
   * sizes to find it still over. (A client that shortens its history may send one
   * again: it is then converted again.)
   */
  stale: HubImagePart[];
  /** This reduction, for the episode's next request. */
  cut: ContextCut;
};

export async function applyBodyBudget(
  request: HubRequest,
  policy: BodyBudgetPolicy,
  decision: ContextDecision,
  options: BodyBudgetOptions,
): Promise<BodyBudgetResult> {
  const budget = Math.min(policy.max_body_bytes ?? options.providerLimitBytes, options.providerLimitBytes);
  const lowWater = Math.floor(budget * policy.low_water_fraction);
  const messages = request.messages;
  const images = listToolImages(messages);
  const batch = policy.image_eviction_batch_size;
  const batches = Math.floor(Math.max(0, images.length - policy.min_recent_tool_images) / batch);
  const blocks = findToolBlocks(messages);
  const removable = Math.max(0, blocks.length - policy.keep_recent_blocks);
  const candidateAt = (step: number): Candidate => ({
    omitted: Math.min(step, batches) * batch,
    removed: Math.max(0, step - batches),
  });
  const keyed = keyMessages(messages, options.keys);
  const keyOf = keyed?.keyOf;
  const kept = keptMessages(messages, images, blocks, keyed);
  const window = options.window;
  const promptOf = promptTokens(request, options.memos, keyOf);
  const promptBefore = promptOf(messages);
  const windowRecord = (after: number) =>
    windowDecision(window, {
      before: promptBefore,
      after,
      engaged: window !== undefined && promptBefore > window.limit,
    });
  const withBudget = (
    bytesAfter: number,
    keptPrevious: boolean,
    promptAfter = promptBefore,
  ): ContextDecision => ({
    ...decision,
    ...windowRecord(promptAfter),
    body_budget: {
      max_body_bytes: budget,
      low_water_bytes: lowWater,
      kept_previous: keptPrevious,
      bytes_before: bytesBefore(),
      bytes_after: bytesAfter,
    },
  });
  const cutOf = (candidate: Candidate) => cutAt(messages, images, blocks, candidate);
  // Before: the whole history's body, images not sized counted at their client data length.
  const bytesBefore = () => withUnsized(options.body.measure(messages, keyOf));

  /**
   * The candidate's bytes, sizing the images it keeps newest first and only while it may
   * still fit. Those that would fit even at their client size (a PNG's WebP is smaller)
   * are sized together: the one-by-one walk would size every one of them anyway.
   */
  const bytesIfFits = async (candidate: Candidate): Promise<number | undefined> => {
    const target = budget;
    const list = kept(candidate);
    if (window !== undefined && promptOf(list) > window.limit) return undefined;
    let size = options.body.measure(list, keyOf);
    while (size.bytes <= target && size.unknown.length > 0) {
      const next: HubImagePart[] = [];
      let room = target - size.bytes;
      for (const image of size.unknown.toReversed()) {
        if (next.length > 0 && image.data.length > room) break;
        next.push(image);
        room -= image.data.length;
      }
      await options.resolve(next);
      size = options.body.measure(list, keyOf);
    }
    return size.bytes <= target ? size.bytes : undefined;
  };

  // The previous reduction (none at the episode's start), if this request still fits with it.
  const previous = usablePrevious(options.previous, { batch, batches, removable }, cutOf);
  const again = await bytesIfFits(previous);
  if (again !== undefined) return chosenResult(previous, again, true);

  const last = batches + removable;
  const mostReduced = candidateAt(last);
  const floor = options.body.measure(kept(mostReduced), keyOf);
  // What is kept at the most reduced candidate is sent whatever the answer: sized at once.
  if (floor.bytes <= budget && floor.unknown.length > 0) await options.resolve(floor.unknown);
  let bytes = await bytesIfFits(mostReduced);
  if (bytes === undefined && window !== undefined && promptOf(kept(mostReduced)) > window.limit) {
    const promptAfter = promptOf(kept(mostReduced));
    throw new ContextPolicyError(
      `the model's window: the prompt is still ~${promptAfter} tokens (images by pixel size) after ` +
        `omitting ${mostReduced.omitted} tool-result images and removing ${mostReduced.removed} call/result ` +
        `blocks, over ${window.limit} (${Math.round(windowLimitShare * 100)}% of the model's max_input_tokens ` +
        `${window.maxInputTokens}; from ~${promptBefore}); the rest is protected: system prompt, tool ` +
        `declarations, user messages, assistant text, the last ${policy.keep_recent_blocks} blocks and the ` +
        `${policy.min_recent_tool_images} most recent tool images`,
      {
        ...withBudget(withUnsized(options.body.measure(kept(mostReduced), keyOf)), false, promptAfter),
        ...reduction(mostReduced, messages, images, blocks),
      },
    );
  }
  if (bytes === undefined) {
    throw overBudget(kept(mostReduced), options.body, {
      budget,
      omitted: mostReduced.omitted,
      removed: mostReduced.removed,
      policy,
      decision: {
        ...withBudget(withUnsized(options.body.measure(kept(mostReduced), keyOf)), false),
        ...reduction(mostReduced, messages, images, blocks),
      },
    });
  }
  // Over with the previous reduction: first the fewest steps that fit the budget…
  let step = last;
  // The block steps keep subsets of the messages of the step with no block removed (the same
  // notices): when that one fits, all of them fit, and walking them one by one (each measured over
  // the whole history) would size the same frames to the same answer.
  if (last > batches) {
    const noBlockRemoved = await bytesIfFits(candidateAt(batches));
    if (noBlockRemoved !== undefined) {
      step = batches;
      bytes = noBlockRemoved;
    }
  }
  while (step > 0) {
    const fewer = await bytesIfFits(candidateAt(step - 1));
    if (fewer === undefined) break;
    bytes = fewer;
    step -= 1;
  }
  // …then more omitted frames, down to the low-water mark or until every omissible frame is a
  // notice; never a block more than the budget needs (a removed block takes its frame with it,
  // also one of the newest). Each of these keeps a subset of the frames just sized.
  const overWindowTarget = (at: number) =>
    window !== undefined && promptOf(kept(candidateAt(at))) > window.target;
  while (step < batches && (bytes > lowWater || overWindowTarget(step))) {
    // A subset of the frames just sized always fits the bytes; it may not fit the window
    // (an omission notice can outweigh a tiny image): then stop at the one that does.
    const more = await bytesIfFits(candidateAt(step + 1));
    if (more === undefined) break;
    step += 1;
    bytes = more;
  }
  return chosenResult(candidateAt(step), bytes, false);

  function chosenResult(chosen: Candidate, bytes: number, keptPrevious: boolean): BodyBudgetResult {
    const cut = cutOf(chosen);
    if (chosen.omitted === 0 && chosen.removed === 0)
      return { request, decision: withBudget(bytes, keptPrevious), stale: [], cut };
    const promptAfter = promptOf(kept(chosen));
    return {
      request: { ...request, messages: kept(chosen) },
      decision: {
        ...withBudget(bytes, keptPrevious, promptAfter),
        ...reduction(chosen, messages, images, blocks),
      },
      stale: images.slice(0, Math.max(0, chosen.omitted - batch)).map(({ messageIndex, partIndex }) => {
        const message = messages[messageIndex] as HubMessage & { role: "tool" };
        return message.content[partIndex] as HubImagePart;
      }),
      cut,
    };
  }
}

/**
 * The previous reduction as a candidate of this request: the same number of batches
 * omitted and blocks removed, ending at the same calls (a client that edited or
 * shortened its history gets none), and allowed by the policy here. Otherwise no reduction.
 */
function usablePrevious(
  previous: ContextCut | undefined,
  limits: { batch: number; batches: number; removable: number },
  cutOf: (candidate: Candidate) => ContextCut,
): Candidate {
  const none = { omitted: 0, removed: 0 };
  if (previous === undefined) return none;
  const { omitted, removed } = previous;
  if (omitted % limits.batch !== 0 || omitted > limits.batches * limits.batch || removed > limits.removable)
    return none;
  return cutOf({ omitted, removed }).anchor === previous.anchor ? { omitted, removed } : none;
}

/** A measured size with the images not sized yet counted at their client data length. */
function withUnsized(size: { bytes: number; unknown: HubImagePart[] }): number {
  return size.bytes + size.unknown.reduce((sum, image) => sum + image.data.length, 0);
}

/** This request's messages and their notice copies by their keys, and how a copy gets its key. */
type KeyedMessages = { keyOf: MessageKeyOf; keyCopy(index: number, count: number, copy: HubMessage): void };

/** The request's messages keyed by their keys (message-keys.ts); none without them. */
function keyMessages(
  messages: readonly HubMessage[],
  messageKeys: readonly MessageKey[] | undefined,
): KeyedMessages | undefined {
  if (messageKeys === undefined) return undefined;
  const keyed = new WeakMap<HubMessage, object>();
  messages.forEach((message, i) => {
    const key = messageKeys[i];
    if (key !== undefined) keyed.set(message, key);
  });
  return {
    keyOf: (message) => keyed.get(message),
    keyCopy(index, count, copy) {
      const key = messageKeys[index];
      if (key !== undefined) keyed.set(copy, key.withNotices(count));
    },
  };
}

/**
 * The messages a candidate keeps: removed blocks left out, omitted images replaced by
 * notices. A tool result's notice copy is made once per number of its images omitted,
 * so the size model measures each copy once (and, keyed, once while the message is resent).
 */
function keptMessages(
  messages: readonly HubMessage[],
  images: ReturnType<typeof listToolImages>,
  blocks: ReturnType<typeof findToolBlocks>,
  keyed: KeyedMessages | undefined,
): (candidate: Candidate) => HubMessage[] {
  const blockOf = new Int32Array(messages.length).fill(-1);
  blocks.forEach((block, b) => {
    for (const index of block.messageIndexes) blockOf[index] = b;
  });
  // Per tool message: the global number of its first image and how many it has.
  const firstImage = new Map<number, number>();
  const imageCount = new Map<number, number>();
  images.forEach((image, i) => {
    if (!firstImage.has(image.messageIndex)) firstImage.set(image.messageIndex, i);
    imageCount.set(image.messageIndex, (imageCount.get(image.messageIndex) ?? 0) + 1);
  });
  const copies = new Map<string, HubMessage>();
  const withNotices = (index: number, count: number): HubMessage => {
    const key = `${index}:${count}`;
    const known = copies.get(key);
    if (known) return known;
    const message = messages[index] as HubMessage & { role: "tool" };
    const content = [...message.content];
    const first = firstImage.get(index) ?? 0;
    for (let i = first; i < first + count; i++) {
      const image = images[i];
      if (image) content[image.partIndex] = createOmissionNotice(message.toolCallId, image.imageNumber);
    }
    const copy = { ...message, content };
    copies.set(key, copy);
    keyed?.keyCopy(index, count, copy);
    return copy;
  };
  return ({ omitted, removed }) =>
    messages.flatMap((message, i) => {
      const block = blockOf[i] ?? -1;
      if (block >= 0 && block < removed) return [];
      const first = firstImage.get(i);
      if (first === undefined || first >= omitted) return [message];
      return [withNotices(i, Math.min(omitted - first, imageCount.get(i) ?? 0))];
    });
}

function reduction(
  { omitted, removed }: Candidate,
  messages: readonly HubMessage[],
  images: ReturnType<typeof listToolImages>,
  blocks: ReturnType<typeof findToolBlocks>,
): Pick<ContextDecision, "reduced" | "images_omitted" | "blocks_removed"> {
  return {
    reduced: omitted > 0 || removed > 0,
    images_omitted: images.slice(0, omitted).map((image) => ({
      toolCallId: (messages[image.messageIndex] as HubMessage & { role: "tool" }).toolCallId,
      index: image.partIndex,
    })),
    blocks_removed: blocks.slice(0, removed).map((block) => ({ toolCallIds: block.toolCallIds })),
  };
}

/**
 * Protected content alone is over the budget. The error names the largest protected
 * item that has a field in the client's request (an image, a tool result or call,
 * by its `source`), so the client can see what to shrink.
 */
function overBudget(
  keptList: HubMessage[],
  body: BodyMeasure,
  details: {
    budget: number;
    omitted: number;
    removed: number;
    policy: BodyBudgetPolicy;
    decision: ContextDecision;
  },
): ContextPolicyError {
  const { budget, omitted, removed, policy, decision } = details;
  const bytes = decision.body_budget?.bytes_after ?? 0;
  const largest = largestProtectedItem(keptList, body);
  const where = largest
    ? `; the largest protected item is ${largest.source} (${largest.bytes} bytes of the body)`
    : "";
  return new ContextPolicyError(
    `context policy body_budget: the upstream body is still ${bytes} bytes after omitting ` +
      `${omitted} tool-result images and removing ${removed} call/result blocks, over ` +
      `max_body_bytes ${budget}; the rest is protected: system prompt, ` +
      `tool declarations, user messages, assistant text, the last ${policy.keep_recent_blocks} blocks ` +
      `and the ${policy.min_recent_tool_images} most recent tool images${where}`,
    decision,
    largest ? { param: largest.source } : {},
  );
}

function largestProtectedItem(
  keptList: HubMessage[],
  body: BodyMeasure,
): { source: string; bytes: number } | undefined {
  const empty = body.measure([]).bytes;
  // An image not sized yet counts at its client data length (nothing is converted to fail).
  const bytesOf = (message: HubMessage) => withUnsized(body.measure([message])) - empty;
  let largest: { source: string; bytes: number } | undefined;
  const consider = (source: string | undefined, bytes: number) => {
    if (source !== undefined && (largest === undefined || bytes > largest.bytes)) largest = { source, bytes };
  };
  for (const message of keptList) {
    if (message.role === "assistant") {
      for (const call of message.toolCalls) consider(call.source, bytesOf({ ...message, toolCalls: [call] }));
    } else if (message.role === "user" || message.role === "tool") {
      for (const part of message.content)
        if (part.type === "image") consider(part.source, bytesOf({ ...message, content: [part] }));
      if (message.role === "tool")
        consider(
          message.source,
          bytesOf({ ...message, content: message.content.filter((p) => p.type === "text") }),
        );
    }
  }
  return largest;
}

/**
 * The prompt tokens (estimate.ts, images by pixel size) of a list of the request's messages
 * or their notice copies; each message object is measured once, and a keyed one once while
 * the episode resends it (its weight kept in the episode's memos by its key).
 */
function promptTokens(
  request: HubRequest,
  memos: FrozenMemos | undefined,
  keyOf: MessageKeyOf | undefined,
): (list: readonly HubMessage[]) => number {
  // A repeated tool list (frozen) is measured once per episode.
  const base = jsonBytesReusingMembers({ ...request, messages: [] }, memos);
  const weights =
    memos !== undefined && keyOf !== undefined
      ? memos.table<object, number>(promptTokens)
      : new WeakMap<object, number>();
  const weightOf = (message: HubMessage) => {
    const key = keyOf?.(message) ?? message;
    let weight = weights.get(key);
    if (weight === undefined) {
      weight = measurePromptBytes(message, memos);
      weights.set(key, weight);
    }
    return weight;
  };
  return (list) => {
    let bytes = base + Math.max(0, list.length - 1);
    for (const message of list) bytes += weightOf(message);
    return tokensFromBytes(bytes);
  };
}
