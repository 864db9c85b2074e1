/**
 * Keys for an episode's history messages that stay the same from request to request while a
 * message is verified equal to the one at its place in the episode's previous request, so
 * that what body_budget measured of a resent message (its prompt weight, its share of the
 * upstream body, and those of its copies with notices) is looked up by its key, not
 * measured again on every turn. Every client resends its whole history each turn and the
 * translation makes new hub messages of it each time, so object identity alone says nothing.
 *
 * Verified, never assumed: a message gets its earlier key only when it equals the message
 * kept at its index, member by member in the same order (strings by value, a frame's
 * stand-in by the SHA-256 its text arrived with, known-frame.ts); any other message (the
 * client edited, dropped or compacted its history) gets a new key and is measured afresh.
 * Whatever is kept by a key is a pure function of the message's content.
 *
 * What is kept: the previous request's messages by index, except those holding an image as
 * a long string (a frame seen for the first time: its base64 is never held beyond its
 * request; resent, it arrives as a stand-in and is kept then), and none past the first
 * `maxKeptChars` characters of their texts (a history that large is measured whole again,
 * as the parse keeps no history past 4 MiB either). Those messages are the translation's
 * own objects, their strings the request's: between turns an episode holds up to that much
 * of its history's text once more, its frames as stand-ins (a digest and a short prefix).
 */
import type { HubMessage } from "../hub/schema.ts";
import { KnownFrame } from "../lib/known-frame.ts";
import { knownTextFromChars } from "../lib/known-texts.ts";

/** One message's key: what is measured of the message, and of its copies with notices, is kept by it. */
export interface MessageKey {
  /** The key of the message's copy with its first `count` images as omission notices. */
  withNotices(count: number): object;
}

/** An episode's keys of its history's messages. */
export interface MessageKeys {
  /** The key of each message of this request, by index: the kept one where the message is verified equal. */
  keysOf(messages: readonly HubMessage[]): MessageKey[];
  /** Keys handed out again (a message verified equal) and new ones, so far. */
  counts(): { reused: number; fresh: number };
}

class Key implements MessageKey {
  readonly #copies = new Map<number, object>();

  withNotices(count: number): object {
    let copy = this.#copies.get(count);
    if (copy === undefined) {
      copy = {};
      this.#copies.set(count, copy);
    }
    return copy;
  }
}

type Kept = { message: HubMessage | undefined; key: Key };

/** What the keys hold of a history at most, in characters of its texts. */
export const maxKeptChars = 4 * 1024 * 1024;

export function createMessageKeys(maxChars = maxKeptChars): MessageKeys {
  let kept: Kept[] = [];
  let reused = 0;
  let fresh = 0;
  return {
    keysOf(messages) {
      let chars = 0;
      const next = messages.map((message, i): Kept => {
        chars += textChars(message);
        const earlier = kept[i];
        if (earlier?.message !== undefined && sameValue(earlier.message, message)) {
          reused += 1;
          return chars > maxChars ? { message: undefined, key: earlier.key } : earlier;
        }
        fresh += 1;
        const holdable = chars <= maxChars && !holdsLongImage(message);
        return { message: holdable ? message : undefined, key: new Key() };
      });
      kept = next;
      return next.map((entry) => entry.key);
    },
    counts: () => ({ reused, fresh }),
  };
}

/** The characters of the message's texts that keeping it holds (a stand-in's or a long string frame's: none). */
function textChars(message: HubMessage): number {
  if (message.role === "assistant")
    return (
      (message.text?.length ?? 0) +
      message.toolCalls.reduce(
        (sum, call) => sum + call.arguments.length + call.name.length + call.id.length,
        0,
      )
    );
  let chars = 0;
  for (const part of message.content)
    if (part.type === "text") chars += part.text.length;
    else if (typeof part.data === "string" && part.data.length < knownTextFromChars)
      chars += part.data.length;
  return chars;
}

/** Whether an image of the message is a long string (a frame's base64, not to be held past its request). */
function holdsLongImage(message: HubMessage): boolean {
  if (message.role !== "user" && message.role !== "tool") return false;
  return message.content.some(
    (part) =>
      part.type === "image" && typeof part.data === "string" && part.data.length >= knownTextFromChars,
  );
}

/**
 * Whether two hub values are the same value: the same members in the same order (a JSON
 * text's order), each the same; a frame's stand-in is the same as another of the same text
 * (the SHA-256 of the bytes that arrived, and its length).
 */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (a instanceof KnownFrame || b instanceof KnownFrame)
    return (
      a instanceof KnownFrame &&
      b instanceof KnownFrame &&
      a.length === b.length &&
      a.facts.digest === b.facts.digest
    );
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameValue(a[i], b[i])) return false;
    return true;
  }
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  for (let i = 0; i < keysA.length; i++) {
    const key = keysA[i] as string;
    if (key !== keysB[i]) return false;
    if (!sameValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
  }
  return true;
}
