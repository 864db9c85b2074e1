/**
 * Long strings that recur in record lines are stored once, in the blob store.
 *
 * An agent CLI sends its whole system prompt, tool descriptions and history again
 * on every turn, and the upstream request repeats the same strings once more: a
 * Claude Code exchange wrote its ~50 KB of long strings twice per exchange, every
 * exchange. A string value of a spliced JSON body (the client's request, the
 * upstream request, a JSON delivery) at least `minTokenBytes` long is kept inline
 * the first time this process writes it and, from its second appearance on (in
 * any line, of any episode of the data directory), replaced by a reference
 * written in exactly this form:
 *   "…long string, escapes and all…"  →  {"$text":"sha256:<hex>","bytes":N}
 * The blob holds the token exactly as it stood in the JSON text, quotes and
 * escapes included (UTF-8, `bytes` long) and redacted as its line would have
 * been, so `inlineTexts` puts it back byte for byte with a pure text substitution.
 * - The scan steps from string token to string token from the start of a JSON text
 *   (each ends at its closing quote, the next quote not escaped, so the next quote
 *   after it opens a token), so it needs no parser and never looks inside a string.
 * - A line whose content already contains `{"$text":` or `{"$blob":` is not given
 *   to `externalize` at all (the writer checks before it references images, and
 *   marks the line `"images_inline":true`), and a text holding `{"$text":` is
 *   returned as it is, so every text reference in a stored line is one the writer made.
 * - Lines of format version 3 and later only: an earlier line's text is never
 *   searched for references it could not have.
 */
import { z } from "zod";
import { closingQuote } from "../body/parse-json-body.ts";
import type { BlobStore } from "./blob-store.ts";

export const textReferenceMarker = '{"$text":';

const referencePattern = /\{"\$text":"sha256:([0-9a-f]{64})","bytes":(\d+)\}/g;

export type RecurringTexts = {
  /** The JSON text with every long string token seen before replaced by a reference (its blob written first). */
  externalize(json: string): string;
  /**
   * How many long strings `externalize` has met for the first time so far. When a
   * call leaves it unchanged, every long string of that text was stored already, so
   * the same text would be given the same result on any later call: the records
   * keep that result for a span they know repeats (known-spans.ts).
   */
  readonly firstSightings: number;
  /** What the records keep per known span, for as long as its key lives. */
  readonly spans: WeakMap<object, KnownSpanScan>;
};

/** A known span's text and what scanning it found. */
export type KnownSpanScan = {
  /**
   * The span's text: these strings joined by commas (one for most spans; a history kept in
   * runs, several), held as their knower holds them.
   */
  parts: readonly string[];
  /** The text's length. */
  length: number;
  /** Whether it contains a reference form (then every line holding it is written inline). */
  referenceForm: boolean;
  /** Its images and long strings as references, once settled (see firstSightings). */
  externalized?: string;
};

/** Whether the token ending at `end` is an object's key (a reference can only stand for a value). */
function isKey(json: string, end: number): boolean {
  let i = end;
  while (json[i] === " " || json[i] === "\t" || json[i] === "\n" || json[i] === "\r") i++;
  return json[i] === ":";
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Remembers long tokens (at most `rememberedBytes` of them, oldest forgotten
 * first, for the process: every episode of the data directory shares them): a
 * token seen once maps to undefined, one already stored to its blob.
 */
export function createRecurringTexts(
  blobs: Pick<BlobStore, "put">,
  options: {
    /** The records' redactor: a stored string is redacted as the line it came from would have been. */
    redact: (text: string) => string;
    minTokenBytes?: number;
    rememberedBytes?: number;
  },
): RecurringTexts {
  const minTokenBytes = options.minTokenBytes ?? 1024;
  const rememberedBytes = options.rememberedBytes ?? 8 * 1024 * 1024;
  const seen = new Map<string, { digest: string; bytes: number } | undefined>();
  let remembered = 0;
  let firstSightings = 0;

  function remember(match: string): void {
    // A copy: a match can share the memory of the whole body it was found in.
    const token = Buffer.from(match).toString();
    seen.set(token, undefined);
    firstSightings += 1;
    remembered += token.length;
    for (const oldest of seen.keys()) {
      if (remembered <= rememberedBytes) break;
      seen.delete(oldest);
      remembered -= oldest.length;
    }
  }

  /** The reference for a long token seen before (its blob written first); undefined the first time. */
  function referenceFor(token: string): string | undefined {
    if (!seen.has(token)) {
      remember(token);
      return undefined;
    }
    let stored = seen.get(token);
    if (stored === undefined) {
      const bytes = encoder.encode(options.redact(token));
      stored = { digest: blobs.put(bytes), bytes: bytes.length };
      seen.set(token, stored);
    }
    return `{"$text":"sha256:${stored.digest}","bytes":${stored.bytes}}`;
  }

  return {
    get firstSightings() {
      return firstSightings;
    },
    spans: new WeakMap(),
    externalize(json) {
      if (json.length < minTokenBytes || json.includes(textReferenceMarker)) return json;
      // Token by token with indexOf rather than a regular expression's replace: most tokens
      // are short, and a callback for each of them was most of the cost.
      const out: string[] = [];
      let copied = 0;
      for (let at = json.indexOf('"'); at >= 0; ) {
        const end = closingQuote(json, at) + 1;
        if (end === 0) break;
        if (end - at >= minTokenBytes && !isKey(json, end)) {
          const reference = referenceFor(json.slice(at, end));
          if (reference !== undefined) {
            out.push(json.slice(copied, at), reference);
            copied = end;
          }
        }
        at = json.indexOf('"', end);
      }
      if (copied === 0) return json;
      out.push(json.slice(copied));
      return out.join("");
    },
  };
}

/** The string token a reference stands for, checked against the reference's length. */
function storedToken(read: (digest: string) => Uint8Array, digest: string, bytes: number): string {
  const data = read(digest);
  if (data.length !== bytes)
    throw new Error(`blob sha256:${digest} has ${data.length} bytes; the text reference says ${bytes}`);
  return decoder.decode(data);
}

/** Reverses `externalize`: the exact original text. */
export function inlineTexts(text: string, read: (digest: string) => Uint8Array): string {
  if (!text.includes(textReferenceMarker)) return text;
  return text.replace(referencePattern, (_reference, digest: string, bytes: string) =>
    storedToken(read, digest, Number(bytes)),
  );
}

const textReferenceSchema = z.strictObject({
  $text: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  bytes: z.number().int().nonnegative(),
});

/** A parsed JSON value with every text reference replaced by the string it stands for. */
export function resolveTextReferences(value: unknown, read: (digest: string) => Uint8Array): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveTextReferences(item, read));
  if (value === null || typeof value !== "object") return value;
  if ("$text" in value) {
    const reference = textReferenceSchema.safeParse(value);
    if (reference.success) {
      const { $text, bytes } = reference.data;
      return JSON.parse(storedToken(read, $text.slice("sha256:".length), bytes)) as string;
    }
  }
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, resolveTextReferences(item, read)]),
  );
}
