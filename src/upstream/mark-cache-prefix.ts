/**
 * Explicit context-cache markers for a model that has Model Studio's explicit cache
 * (its `cache` capability `explicit` or `both`; docs/prompt-cache.md): `cache_control:
 * {"type":"ephemeral"}` on at most 4 content blocks, within the provider's rules.
 *
 * Where, in this order until 4 are placed:
 * 1. the last block of the prompt that can carry one: after the answer the whole prompt
 *    is an entry, and the next turn, which appends to it, hits it;
 * 2. the messages the client marked itself (Claude Code marks its system prompt and its
 *    newest message; `hinted`, chat message indexes), each at its last block, newest first;
 * 3. one block about every 20 blocks further back from the first marker, so that a turn
 *    that added more than 20 blocks still finds the previous turn's entry (a marker looks
 *    back at most 20 blocks).
 * A block whose prefix has fewer than 1024 tokens gets none (no entry could be created).
 * Blocks of system, user and tool messages can carry a marker (as qwen-code, Alibaba's own
 * client, places them: string content becomes one text part); an assistant message's
 * cannot. Client markers not chosen are removed, so a request never has more than 4.
 *
 * Pure; the upstream body grows by at most `cacheMarkerReserveBytes`, which the body
 * budget keeps free.
 */
import type { ChatContentPart, ChatMessage } from "./chat-schema.ts";
import { hasCacheMarker, listPromptBlocks, type PromptBlock } from "./prompt-blocks.ts";

export const maxCacheMarkers = 4;
const lookBack = 20;
const minTokens = 1024;
const marker = { type: "ephemeral" } as const;

/**
 * Bytes the markers add at most: a string content turned into a marked text part adds
 * `[{"type":"text","text":` and `,"cache_control":{"type":"ephemeral"}}]` (62 bytes).
 */
export const cacheMarkerReserveBytes =
  maxCacheMarkers * (`[{"type":"text","text":`.length + `,"cache_control":{"type":"ephemeral"}}]`.length);

const markable = (message: ChatMessage | undefined) =>
  message !== undefined && (message.role === "system" || message.role === "user" || message.role === "tool");

/** Which blocks get a marker (indexes into the prompt's blocks, newest first). */
export function chooseCacheMarkers(
  messages: readonly ChatMessage[],
  blocks: readonly PromptBlock[],
  hinted: readonly number[] = [],
): number[] {
  const prefixTokens: number[] = [];
  let sum = 0;
  for (const block of blocks) {
    sum += block.tokens;
    prefixTokens.push(sum);
  }
  const eligible = (i: number) =>
    markable(messages[(blocks[i] as PromptBlock).message]) && (prefixTokens[i] as number) >= minTokens;
  const chosen: number[] = [];
  const choose = (i: number) => {
    if (chosen.length < maxCacheMarkers && !chosen.includes(i)) chosen.push(i);
  };
  /** The newest eligible block at or before `at`. */
  const atOrBefore = (at: number) => {
    for (let i = at; i >= 0; i--) if (eligible(i)) return i;
    return -1;
  };
  const last = atOrBefore(blocks.length - 1);
  if (last < 0) return [];
  choose(last);
  const lastOfMessage = new Map<number, number>();
  blocks.forEach((block, i) => {
    lastOfMessage.set(block.message, i);
  });
  for (const m of [...hinted].sort((a, b) => b - a)) {
    const i = lastOfMessage.get(m);
    if (i !== undefined && eligible(i)) choose(i);
  }
  for (let at = last - lookBack; at >= 0 && chosen.length < maxCacheMarkers; at -= lookBack) {
    const i = atOrBefore(at);
    if (i < 0) break;
    choose(i);
  }
  return chosen;
}

/** The messages with markers on the chosen blocks and on no other. */
export function markCachePrefix(
  messages: ChatMessage[],
  tools?: unknown,
  hinted: readonly number[] = [],
): ChatMessage[] {
  const blocks = listPromptBlocks({ tools, messages }, { digests: false });
  const chosen = new Set(chooseCacheMarkers(messages, blocks, hinted));
  const touched = new Set<number>();
  blocks.forEach((block, i) => {
    if (chosen.has(i) || block.marked) touched.add(block.message);
  });
  if (touched.size === 0) return messages;
  const wanted = new Map<string, boolean>();
  blocks.forEach((block, i) => {
    wanted.set(`${block.message}:${block.part}`, chosen.has(i));
  });
  return messages.map((message, m) => {
    if (!touched.has(m) || !markable(message)) return message;
    const content = message.content as string | ChatContentPart[];
    if (typeof content === "string")
      return wanted.get(`${m}:-1`)
        ? ({ ...message, content: [{ type: "text", text: content, cache_control: marker }] } as ChatMessage)
        : message;
    const parts = content.map((part, p) => {
      const { cache_control: _old, ...plain } = part;
      return wanted.get(`${m}:${p}`) ? { ...plain, cache_control: marker } : plain;
    });
    return { ...message, content: parts } as ChatMessage;
  });
}

/**
 * The messages as they were before markCachePrefix: no `cache_control`, and a content
 * it turned into one marked text part a string again (the request builder never makes a
 * one-text-part array of its own: text-only content is a string). For what is compared
 * or exported turn by turn (the markers move every turn).
 */
export function unmarkCachePrefix<T extends Record<string, unknown>>(messages: T[]): T[] {
  return messages.map((message) => {
    const content = message.content;
    if (!Array.isArray(content) || !content.some(hasCacheMarker)) return message;
    const parts = content.map((part: Record<string, unknown>) => {
      const { cache_control: _marker, ...plain } = part;
      return plain;
    });
    const only = parts[0];
    const text =
      parts.length === 1 && only?.type === "text" && typeof only.text === "string" ? only.text : undefined;
    return { ...message, content: text ?? parts };
  });
}
