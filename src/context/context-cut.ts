/**
 * A reduction a context policy made, remembered by the episode for its next request:
 * how many of the oldest tool-result images became notices and how many of the oldest
 * call/result blocks were removed, and where that ends (the anchor: the call ids of the
 * last image omitted and of the last block removed). The next request, whose history
 * extends this one, is first tried with the very same reduction: while it fits, the
 * prompt keeps its prefix and the provider's cache can serve it (docs/context-policies.md).
 * The anchor makes sure the same counts mean the same items: a client that edited,
 * compacted or shortened its history gets a fresh decision.
 *
 * `ContextMemory` is the episode's slot for it: a hint, never trusted for more than a
 * starting candidate, so two exchanges of one episode racing on it cost only a reduction.
 * It also holds the episode's message keys (message-keys.ts), by which body_budget keeps
 * what it measured of a resent message; those are verified per message, never trusted.
 */
import type { HubMessage } from "../hub/schema.ts";
import type { ToolImage } from "./apply-sliding-window.ts";
import type { ToolBlock } from "./find-tool-blocks.ts";
import { createMessageKeys, type MessageKeys } from "./message-keys.ts";

export interface ContextCut {
  omitted: number;
  removed: number;
  anchor: string;
}

export interface ContextMemory {
  previous: ContextCut | undefined;
  /** The keys of the episode's messages (what is measured of a resent message is kept by its key). */
  readonly keys: MessageKeys;
}

export function createContextMemory(): ContextMemory {
  return { previous: undefined, keys: createMessageKeys() };
}

/** The cut of `omitted` oldest tool images and `removed` oldest blocks of this history. */
export function cutAt(
  messages: readonly HubMessage[],
  images: readonly ToolImage[],
  blocks: readonly ToolBlock[],
  { omitted, removed }: { omitted: number; removed: number },
): ContextCut {
  const image = omitted > 0 ? images[omitted - 1] : undefined;
  const imageCall = image ? (messages[image.messageIndex] as HubMessage & { role: "tool" }).toolCallId : "";
  const blockCalls = removed > 0 ? (blocks[removed - 1]?.toolCallIds.join(",") ?? "") : "";
  return { omitted, removed, anchor: `${omitted}:${imageCall}|${removed}:${blockCalls}` };
}
