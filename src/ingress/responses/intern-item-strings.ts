/**
 * One string per distinct long content string across an episode's stored responses.
 *
 * A client that resends its whole camera history on every turn and leaves `store` at
 * its default (true) makes every turn's stored input a fresh parse of every frame: equal
 * data URLs, separate allocations, so the store held frames × turns copies (quadratic in
 * turns, gigabytes over a long 640×480 episode). Stored items therefore carry, for every
 * long string (image data URLs, long texts), the first equal string this store kept.
 * Values are unchanged, so resolution is byte-identical. Strings shorter than
 * `minInternChars` are left alone: looking them up would cost more than it saves.
 */
import type { FrameText } from "../../lib/known-frame.ts";
import type { ContentPart, InputItem } from "./schema.ts";

/** Below this a string is kept as given (a frame's data URL is tens of KB and more). */
export const minInternChars = 4096;

/** Returns the items with their long strings replaced by the equal ones kept before. */
export type ItemInterner = (items: readonly InputItem[]) => InputItem[];

export function createItemInterner(): ItemInterner {
  // Keyed by the string's content: a lookup hashes and compares it natively, about three
  // times faster than a SHA-256 of it (0.35 vs 1 ms a 640×480 frame) and exact.
  const kept = new Map<string, string>();
  // Items this interner returned: a chained request's earlier items come back as these
  // very objects, and need not be hashed again on every turn.
  const done = new WeakSet<InputItem>();

  const intern = (text: string): string => {
    const found = kept.get(text);
    if (found !== undefined) return found;
    // Kept as it is, not copied: a split body's images are compact strings of their own
    // (split-text.ts), and a copy would double each frame while its request is alive.
    kept.set(text, text);
    return text;
  };
  // A stand-in (known-frame.ts) is not a string: it holds no text to share.
  const long = (text: FrameText | null | undefined): text is string =>
    typeof text === "string" && text.length >= minInternChars;

  const part = (p: ContentPart): ContentPart => {
    if (p.type === "input_image") return long(p.image_url) ? { ...p, image_url: intern(p.image_url) } : p;
    return long(p.text) ? { ...p, text: intern(p.text) } : p;
  };
  const content = <T extends string | ContentPart[]>(value: T): T =>
    (typeof value === "string" ? (long(value) ? intern(value) : value) : value.map(part)) as T;

  const item = (i: InputItem): InputItem => {
    if (done.has(i)) return i;
    const out =
      i.type === "message"
        ? { ...i, content: content(i.content) }
        : i.type === "function_call_output"
          ? { ...i, output: content(i.output) }
          : i;
    done.add(out);
    return out;
  };

  return (items) => items.map(item);
}
