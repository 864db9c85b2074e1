/**
 * Splits a JSON body while its bytes arrive (see split-text.ts): the body is never
 * one buffer or one string. Each chunk is scanned for string tokens; a token whose
 * value is long base64 becomes a compact string of its own, everything else is
 * copied into a small buffer of the rest, decoded once at the end (UTF-8, a leading
 * BOM dropped, invalid bytes replaced: exactly what `Request.text()` gives, since
 * only whole ASCII tokens are taken out).
 *
 * The scan needs no parser: outside a string a quote opens one; inside, the next
 * quote after an even run of backslashes closes it (UTF-8 never has the bytes of `"`
 * or `\` inside a multi-byte character). For valid JSON that is exactly its string
 * tokens, so a placeholder always stands where a whole string value (or key) stood;
 * for invalid JSON the text still joins back byte for byte, and its parse fails the
 * same way.
 *
 * Given a hold (known-texts.ts), each long string is identified by the SHA-256 of its
 * bytes as it arrives and registered with what earlier requests derived from the same
 * text: a frame resent on every turn is then not checked again here (whether it is
 * long base64) nor by the stages after (its base64, its digest, its PNG header).
 * When the store knows where frames are rebuilt from (its blob store), a string whose
 * facts include its blob reference and whose blob is on disk now never becomes a string
 * at all: a stand-in (known-frame.ts) takes its place, and its bytes are dropped.
 */
import {
  type FrameText,
  framePrefixChars,
  type ImageBlob,
  imageBlobFact,
  KnownFrame,
} from "../lib/known-frame.ts";
import type { KnownTexts, TextFacts, TextHold } from "../lib/known-texts.ts";
import { type BodyReadBounds, readBodyChunks } from "./read-body-chunks.ts";
import {
  longBase64Value,
  newNonce,
  placeholderToken,
  type SplitText,
  splitFromChars,
  unsplit,
  wholeText,
} from "./split-text.ts";

const quote = 0x22;
const backslash = 0x5c;

export type JsonSplitter = {
  /** Scans the next bytes of the body (the splitter may keep views of the chunk: it must not change after). */
  push(chunk: Uint8Array): void;
  /** The body received so far, in bytes. */
  readonly bytes: number;
  /** The whole body, split; bodies under `keepWholeUnder` bytes come back whole (`unsplit`). */
  finish(): SplitText;
  /** The body will not be finished (its reading failed): the strings registered so far are let go of. */
  abandon(): void;
};

/** The fact the splitter remembers of a long string's text: whether it is taken out. */
const longBase64Fact = "long_base64_value";

/** The facts of a taken-out data URL's base64 after its comma, as a text of its own (the hub's image data). */
function payloadFacts(
  hold: TextHold,
  facts: TextFacts,
  value: string,
): { payload: string; facts: TextFacts } | undefined {
  if (!value.startsWith("data:")) return undefined;
  const comma = value.indexOf(",");
  return { payload: value.slice(comma + 1), facts: hold.factsOf(`${facts.digest}#${comma + 1}`) };
}

/**
 * The stand-in for a text whose facts say it is an image literal with a blob reference,
 * when that blob is on disk now (its text can be rebuilt from it); else undefined (the full path).
 */
function standInFor(
  hold: TextHold,
  facts: TextFacts,
  content: readonly Uint8Array[],
  length: number,
): KnownFrame | undefined {
  const frames = hold.frames;
  const image = facts.values.get(imageBlobFact) as ImageBlob | undefined;
  if (frames === undefined || image === undefined || !frames.onDisk(image.digest)) return undefined;
  const head = image.dataUrl ? `data:${image.mediaType};base64,` : "";
  if (head.length !== image.base64From) return undefined;
  const payload = image.dataUrl ? hold.factsOf(`${facts.digest}#${image.base64From}`) : facts;
  seedBase64Facts(payload, image);
  hold.frameCounts?.standIn();
  return new KnownFrame(
    facts,
    length,
    { blob: image.digest, head, prefix: prefixOf(content, head.length + framePrefixChars) },
    frames,
    hold.frameCounts,
    image.dataUrl ? payload : undefined,
  );
}

/** The first `n` characters of ASCII text that arrived in pieces (its own string: nothing else is kept). */
function prefixOf(content: readonly Uint8Array[], n: number): string {
  let prefix = "";
  for (const part of content) {
    if (prefix.length >= n) break;
    prefix += Buffer.from(part.buffer, part.byteOffset, Math.min(part.length, n - prefix.length)).toString(
      "latin1",
    );
  }
  return prefix;
}

/**
 * What a blob reference says of the canonical base64 it was made for (image-references.ts),
 * as the facts of that base64 the stages ask: it is base64 (plain, no whitespace), decodes to
 * `bytes` bytes, whose SHA-256 is the blob's name. The same answers base64.ts and sha256.ts compute.
 */
function seedBase64Facts(payload: TextFacts, image: ImageBlob): void {
  const seed = (kind: string, value: unknown) => {
    if (!payload.values.has(kind)) payload.values.set(kind, value);
  };
  seed("base64", true);
  seed("plain_base64", true);
  seed("decoded_length", image.bytes);
  seed("sha256_of_base64", image.digest);
}

export function createJsonSplitter(
  options: { keepWholeUnder?: number; knownTexts?: KnownTexts } = {},
): JsonSplitter {
  const nonce = newNonce();
  const hold = options.knownTexts?.hold();
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const strings: FrameText[] = [];
  let rest = new Uint8Array(64 * 1024);
  let restLength = 0;
  let bytes = 0;
  let inString = false;
  // The open string's content so far (copied out of earlier chunks) and its trailing backslashes.
  let pieces: Uint8Array[] = [];
  let contentLength = 0;
  let trailingBackslashes = 0;

  const append = (part: Uint8Array) => {
    if (restLength + part.length > rest.length) {
      const grown = new Uint8Array(Math.max(rest.length * 2, restLength + part.length));
      grown.set(rest.subarray(0, restLength));
      rest = grown;
    }
    rest.set(part, restLength);
    restLength += part.length;
  };
  const quoteByte = Uint8Array.of(quote);
  const appendString = (content: Uint8Array[]) => {
    append(quoteByte);
    for (const part of content) append(part);
    append(quoteByte);
  };
  // A string that spans chunks is put together here, one buffer reused for every string: a
  // copy per string would be as much garbage as the images themselves, collected late.
  let scratch = new Uint8Array(0);
  const joined = (parts: Uint8Array[], length: number) => {
    if (parts.length === 1) return parts[0] as Uint8Array;
    if (scratch.length < length) scratch = new Uint8Array(Math.max(length, scratch.length * 2));
    let at = 0;
    for (const part of parts) {
      scratch.set(part, at);
      at += part.length;
    }
    return scratch.subarray(0, length);
  };

  const closeString = (last: Uint8Array) => {
    const content = [...pieces, last];
    const length = contentLength + last.length;
    pieces = [];
    inString = false;
    if (length >= splitFromChars) {
      // Hashed piece by piece: a known frame's bytes are never put together.
      let facts: TextFacts | undefined;
      if (hold) {
        const hasher = new Bun.CryptoHasher("sha256");
        for (const part of content) hasher.update(part);
        facts = hold.factsOf(hasher.digest("hex"));
      }
      const known = facts?.values.get(longBase64Fact) as boolean | undefined;
      const standIn = known === true && hold && facts ? standInFor(hold, facts, content, length) : undefined;
      if (standIn !== undefined) {
        strings.push(standIn);
        append(encoder.encode(placeholderToken(nonce, strings.length - 1)));
        return;
      }
      const bytes = joined(content, length);
      if (known !== false) {
        const value = decoder.decode(bytes);
        const taken = known ?? longBase64Value.test(value);
        facts?.values.set(longBase64Fact, taken);
        if (taken) {
          strings.push(value);
          append(encoder.encode(placeholderToken(nonce, strings.length - 1)));
          if (hold && facts) {
            hold.add(value, facts);
            const payload = payloadFacts(hold, facts, value);
            if (payload) hold.add(payload.payload, payload.facts);
          }
          return;
        }
      }
    }
    appendString(content);
  };

  /** How many backslashes end `chunk[from, to)`, counting on into the content before it when all are. */
  const backslashesBefore = (chunk: Uint8Array, from: number, to: number) => {
    let count = 0;
    while (to - count > from && chunk[to - count - 1] === backslash) count++;
    return count === to - from ? count + trailingBackslashes : count;
  };

  return {
    get bytes() {
      return bytes;
    },
    push(chunk) {
      bytes += chunk.length;
      let at = 0;
      while (at < chunk.length) {
        if (!inString) {
          const open = chunk.indexOf(quote, at);
          if (open < 0) {
            append(chunk.subarray(at));
            return;
          }
          append(chunk.subarray(at, open));
          inString = true;
          contentLength = 0;
          trailingBackslashes = 0;
          at = open + 1;
          continue;
        }
        let close = chunk.indexOf(quote, at);
        while (close >= 0 && backslashesBefore(chunk, at, close) % 2 === 1)
          close = chunk.indexOf(quote, close + 1);
        if (close < 0) {
          trailingBackslashes = backslashesBefore(chunk, at, chunk.length);
          // A view: the chunk is kept only until this string closes (it is mostly this string).
          pieces.push(chunk.subarray(at));
          contentLength += chunk.length - at;
          return;
        }
        closeString(chunk.subarray(at, close));
        at = close + 1;
      }
    },
    abandon() {
      hold?.release();
    },
    finish() {
      // An unterminated string (invalid JSON) stays in the text as it came.
      if (inString) {
        append(quoteByte);
        for (const part of pieces) append(part);
        pieces = [];
        inString = false;
      }
      const reduced = decoder.decode(rest.subarray(0, restLength));
      const split: SplitText =
        strings.length === 0 ? unsplit(reduced) : { reduced, strings, nonce, ...(hold ? { hold } : {}) };
      if (bytes >= (options.keepWholeUnder ?? 0)) return split;
      hold?.release();
      return unsplit(wholeText(split));
    },
  };
}

/**
 * Reads a body stream to its end through a splitter, under `limitBytes` and `signal`
 * (read-body-chunks.ts: over the limit it rejects with BodyOverLimitError, on abort
 * with the signal's reason, and reads no further).
 */
export async function readSplitJson(
  stream: ReadableStream<Uint8Array>,
  options: { keepWholeUnder?: number; knownTexts?: KnownTexts } & BodyReadBounds = {},
): Promise<SplitText> {
  const splitter = createJsonSplitter(options);
  try {
    await readBodyChunks(stream, options, (chunk) => splitter.push(chunk));
  } catch (error) {
    splitter.abandon();
    throw error;
  }
  return splitter.finish();
}
