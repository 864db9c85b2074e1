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
 *
 * When the store hashes off the main thread (sha256-off-thread.ts), each chunk holding
 * bytes of a long string goes to the hashing worker once it is scanned (its buffer
 * transferred, not copied) and comes back with the digests of the strings that ended in
 * it; the splitter keeps scanning meanwhile. A long string's place in the text is kept,
 * and what it becomes (a stand-in, a taken-out string, or the string as it came) is
 * decided when its digest is back, in the order the strings came, exactly as when
 * hashed here. `finish` waits for the last chunk back. The bytes of a string that may
 * still turn out short (under `splitFromChars` so far) are copied out of its chunk, so
 * that a body without long strings never waits on the worker.
 */
import {
  type FrameText,
  framePrefixChars,
  type ImageBlob,
  imageBlobFact,
  KnownFrame,
} from "../lib/known-frame.ts";
import type { KnownTexts, TextFacts, TextHold } from "../lib/known-texts.ts";
import type { HashedChunk, HashPart, OffThreadSha256 } from "../lib/sha256-off-thread.ts";
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
  /**
   * Scans the next bytes of the body. The splitter may keep views of the chunk (it must not
   * change after) and may hand its buffer to the hashing worker (the chunk is then detached).
   * Returns a promise when the worker is more than `hashAheadBytes` behind: the next chunk
   * should wait for it (the body is then read no faster than it is hashed).
   */
  push(chunk: Uint8Array): undefined | Promise<void>;
  /** The body received so far, in bytes. */
  readonly bytes: number;
  /**
   * The whole body, split, once every long string's digest is back; bodies under
   * `keepWholeUnder` bytes come back whole (`unsplit`). Rejects with the hashing worker's
   * retryable error when it failed.
   */
  finish(): Promise<SplitText>;
  /** The body will not be finished (its reading failed): the strings registered so far are let go of. */
  abandon(): void;
};

/**
 * A chunk the splitter keeps views of; `bytes` is undefined while its buffer is with the
 * hashing worker, and once it was let go of. A chunk handed to the worker (`sent`) counts the
 * pieces of undecided long strings in it (`users`): once it is back and none is left, its
 * memory is given back at once rather than at the next collection (a camera history's known
 * frames are ~95% of its chunks, all garbage once decided).
 */
type Chunk = { bytes: Uint8Array | undefined; sent?: boolean; back?: boolean; users?: number };

/** A piece of a string's content: a range of a chunk. */
type Piece = { chunk: Chunk; from: number; to: number };

function bytesOf(piece: Piece): Uint8Array {
  const bytes = piece.chunk.bytes;
  if (bytes === undefined) throw new Error("a piece of the body was read while its chunk was being hashed");
  return bytes.subarray(piece.from, piece.to);
}

/** A piece as bytes of its own (a few, of a string that may still turn out short; a Buffer's slice would be a view). */
function copiedPiece(bytes: Uint8Array): Piece {
  return { chunk: { bytes: new Uint8Array(bytes) }, from: 0, to: bytes.length };
}

/** What a long string becomes: a stand-in or a taken-out string (a placeholder), or the string as it came. */
type Outcome = { taken: FrameText } | { asItCame: Piece[] };

/** A long string whose digest is being computed off the main thread, at its place in the rest of the text. */
type PendingString = { restAt: number; pieces: Piece[]; length: number; outcome?: Outcome };

/** The string token being scanned: its content so far, and its id at the hashing worker once it is long. */
type OpenString = { pieces: Piece[]; length: number; trailingBackslashes: number; id?: number };

/**
 * How far the reading of a body may run ahead of its hashing worker, in bytes of chunks at the
 * worker: when the other core is busy, the chunks would otherwise pile up while the body arrives.
 */
export const hashAheadBytes = 8 * 1024 * 1024;

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
  content: readonly Piece[],
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
function prefixOf(content: readonly Piece[], n: number): string {
  let prefix = "";
  for (const piece of content) {
    if (prefix.length >= n) break;
    const part = bytesOf(piece);
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
  const offThread: OffThreadSha256 | undefined = hold ? options.knownTexts?.hashing : undefined;
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const strings: FrameText[] = [];
  let rest = new Uint8Array(64 * 1024);
  let restLength = 0;
  let bytes = 0;
  let open: OpenString | undefined;
  // Off the main thread: the long strings in the order they came, those whose digest is
  // still out by id, the chunks still with the worker, and the first failure.
  const pending: PendingString[] = [];
  const awaitingDigest = new Map<number, PendingString>();
  let chunksOut = 0;
  let bytesOut = 0;
  let caughtUp: (() => void) | undefined;
  let failure: Error | undefined;
  let abandoned = false;
  let allBack: (() => void) | undefined;

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
  const appendString = (content: readonly Piece[]) => {
    append(quoteByte);
    for (const piece of content) append(bytesOf(piece));
    append(quoteByte);
  };
  const appendOutcome = (outcome: Outcome) => {
    if ("asItCame" in outcome) {
      appendString(outcome.asItCame);
      return;
    }
    strings.push(outcome.taken);
    append(encoder.encode(placeholderToken(nonce, strings.length - 1)));
  };
  // A string that spans chunks is put together here, one buffer reused for every string: a
  // copy per string would be as much garbage as the images themselves, collected late.
  let scratch = new Uint8Array(0);
  const joined = (content: readonly Piece[], length: number) => {
    if (content.length === 1) return bytesOf(content[0] as Piece);
    if (scratch.length < length) scratch = new Uint8Array(Math.max(length, scratch.length * 2));
    let at = 0;
    for (const piece of content) {
      const part = bytesOf(piece);
      scratch.set(part, at);
      at += part.length;
    }
    return scratch.subarray(0, length);
  };

  /** What a long string becomes, given the SHA-256 of its bytes when there is a hold. */
  const outcomeOf = (content: Piece[], length: number, digest: string | undefined): Outcome => {
    const facts = hold && digest !== undefined ? hold.factsOf(digest) : undefined;
    const known = facts?.values.get(longBase64Fact) as boolean | undefined;
    const standIn = known === true && hold && facts ? standInFor(hold, facts, content, length) : undefined;
    if (standIn !== undefined) return { taken: standIn };
    if (known !== false) {
      const value = decoder.decode(joined(content, length));
      const taken = known ?? longBase64Value.test(value);
      facts?.values.set(longBase64Fact, taken);
      if (taken) {
        if (hold && facts) {
          hold.add(value, facts);
          const payload = payloadFacts(hold, facts, value);
          if (payload) hold.add(payload.payload, payload.facts);
        }
        return { taken: value };
      }
    }
    return { asItCame: content };
  };

  /** A string token closed on the main thread's side: decided now, unless its digest is out. */
  const closeString = (closed: OpenString) => {
    open = undefined;
    if (closed.id !== undefined) {
      const string: PendingString = { restAt: restLength, pieces: closed.pieces, length: closed.length };
      pending.push(string);
      awaitingDigest.set(closed.id, string);
      return;
    }
    if (closed.length < splitFromChars) {
      appendString(closed.pieces);
      return;
    }
    let digest: string | undefined;
    if (hold) {
      // Hashed piece by piece: a known frame's bytes are never put together.
      const hasher = new Bun.CryptoHasher("sha256");
      for (const piece of closed.pieces) hasher.update(bytesOf(piece));
      digest = hasher.digest("hex");
    }
    appendOutcome(outcomeOf(closed.pieces, closed.length, digest));
  };

  /** The digests of strings that ended in a chunk back from the worker: each string decided, in order. */
  const chunkBack = (chunk: Chunk, hashed: HashedChunk) => {
    chunk.bytes = new Uint8Array(hashed.buffer);
    chunk.back = true;
    for (const [id, digest] of hashed.digests) {
      const string = awaitingDigest.get(id);
      awaitingDigest.delete(id);
      if (string === undefined || abandoned || failure) continue;
      const outcome = outcomeOf(string.pieces, string.length, digest);
      string.outcome = outcome;
      // A string that stays as it came is copied into the text at the end, from its chunks.
      if ("asItCame" in outcome) continue;
      for (const piece of string.pieces) letGo(piece.chunk);
      string.pieces = [];
    }
    if (chunk.users === 0) giveBack(chunk);
  };
  /** One piece of an undecided string in a sent chunk decided: the chunk given back once it is back and unused. */
  const letGo = (chunk: Chunk) => {
    if (!chunk.sent) return;
    chunk.users = (chunk.users ?? 0) - 1;
    if (chunk.users === 0 && chunk.back) giveBack(chunk);
  };
  const giveBack = (chunk: Chunk) => {
    const buffer = chunk.bytes?.buffer as ArrayBuffer | undefined;
    chunk.bytes = undefined;
    buffer?.transfer(0);
  };
  const chunkDone = (length: number) => {
    chunksOut -= 1;
    bytesOut -= length;
    if (caughtUp && bytesOut <= hashAheadBytes / 2) {
      caughtUp();
      caughtUp = undefined;
    }
    if (chunksOut === 0) allBack?.();
  };

  /** How many backslashes end `chunk[from, to)`, counting on into the content before it when all are. */
  const backslashesBefore = (chunk: Uint8Array, from: number, to: number, before: number) => {
    let count = 0;
    while (to - count > from && chunk[to - count - 1] === backslash) count++;
    return count === to - from ? count + before : count;
  };

  /**
   * A piece of the open string in this chunk: kept as a range of the chunk (and, once the
   * string is long, handed to the worker with it), or copied out while the string is short.
   */
  const takePiece = (string: OpenString, chunk: Chunk, from: number, to: number, parts: HashPart[]) => {
    if (to === from) return;
    string.length += to - from;
    if (offThread === undefined) {
      string.pieces.push({ chunk, from, to });
      return;
    }
    if (string.id === undefined && string.length >= splitFromChars) {
      const id = offThread.nextId();
      string.id = id;
      for (const piece of string.pieces) parts.push({ id, bytes: bytesOf(piece) });
    }
    if (string.id === undefined)
      string.pieces.push(copiedPiece((chunk.bytes as Uint8Array).subarray(from, to)));
    else {
      string.pieces.push({ chunk, from, to });
      chunk.users = (chunk.users ?? 0) + 1;
      parts.push({ id: string.id, from, to });
    }
  };

  /** Scans one chunk; returns the parts of long strings in it, and the ids of those that ended in it. */
  const scan = (bytesIn: Uint8Array, chunk: Chunk, parts: HashPart[], ends: number[]) => {
    let at = 0;
    while (at < bytesIn.length) {
      if (open === undefined) {
        const opening = bytesIn.indexOf(quote, at);
        if (opening < 0) {
          append(bytesIn.subarray(at));
          return;
        }
        append(bytesIn.subarray(at, opening));
        open = { pieces: [], length: 0, trailingBackslashes: 0 };
        at = opening + 1;
        continue;
      }
      const string: OpenString = open;
      const before = string.trailingBackslashes;
      let close = bytesIn.indexOf(quote, at);
      while (close >= 0 && backslashesBefore(bytesIn, at, close, before) % 2 === 1)
        close = bytesIn.indexOf(quote, close + 1);
      if (close < 0) {
        string.trailingBackslashes = backslashesBefore(bytesIn, at, bytesIn.length, before);
        // A range of the chunk: it is kept only until this string is decided (it is mostly this string).
        takePiece(string, chunk, at, bytesIn.length, parts);
        return;
      }
      takePiece(string, chunk, at, close, parts);
      if (string.id !== undefined) ends.push(string.id);
      closeString(string);
      at = close + 1;
    }
  };

  return {
    get bytes() {
      return bytes;
    },
    push(bytesIn) {
      bytes += bytesIn.length;
      const chunk: Chunk = { bytes: bytesIn };
      const parts: HashPart[] = [];
      const ends: number[] = [];
      scan(bytesIn, chunk, parts, ends);
      if (offThread === undefined || (parts.length === 0 && ends.length === 0)) return undefined;
      // The chunk goes whole, without a copy, when it owns its buffer (a request stream's chunks do).
      const owned =
        bytesIn.byteOffset === 0 &&
        bytesIn.buffer instanceof ArrayBuffer &&
        bytesIn.byteLength === bytesIn.buffer.byteLength;
      const buffer = owned ? (bytesIn.buffer as ArrayBuffer) : new Uint8Array(bytesIn).buffer;
      chunk.bytes = undefined;
      chunk.sent = true;
      chunk.users ??= 0;
      chunksOut += 1;
      const length = buffer.byteLength;
      bytesOut += length;
      offThread.hash(buffer, parts, ends).then(
        (hashed) => {
          chunkBack(chunk, hashed);
          chunkDone(length);
        },
        (error: Error) => {
          failure ??= error;
          chunkDone(length);
        },
      );
      if (bytesOut <= hashAheadBytes) return undefined;
      return new Promise<void>((resolve) => {
        caughtUp = resolve;
      });
    },
    abandon() {
      abandoned = true;
      if (open?.id !== undefined) offThread?.drop([open.id]);
      hold?.release();
    },
    async finish() {
      if (chunksOut > 0) await new Promise<void>((resolve) => (allBack = resolve));
      if (failure) {
        hold?.release();
        throw failure;
      }
      // An unterminated string (invalid JSON) stays in the text as it came.
      const unterminated = open;
      if (unterminated?.id !== undefined) offThread?.drop([unterminated.id]);
      if (pending.length > 0) {
        // Each long string at its place, now that all are decided.
        const scanned = rest.subarray(0, restLength);
        rest = new Uint8Array(restLength + 64 * pending.length);
        restLength = 0;
        let from = 0;
        for (const string of pending) {
          append(scanned.subarray(from, string.restAt));
          from = string.restAt;
          appendOutcome(string.outcome as Outcome);
        }
        append(scanned.subarray(from));
      }
      if (unterminated) {
        append(quoteByte);
        for (const piece of unterminated.pieces) append(bytesOf(piece));
        open = undefined;
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
