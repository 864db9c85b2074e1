/**
 * What was derived from a request's long strings (a camera history's base64 frames),
 * kept across requests by the SHA-256 of each string's text, so that a frame resent
 * on every turn is not scanned, checked and hashed again by every stage on every turn.
 *
 * The identity is verified, never assumed: a string's facts are found by its exact
 * content. While a request is processed, its long strings are registered with its
 * `TextHold` by the body splitter (split-json-bytes.ts), which has the SHA-256 of each
 * one's bytes computed as they arrive (in a worker, sha256-off-thread.ts, when the store
 * is given one); a stage looks a string up by its value in the
 * request's hold (a Map compares the whole content on a hit). Across requests the facts
 * are found by that SHA-256 of the text: two different texts with the same digest would
 * be a SHA-256 collision, which nobody can produce. Each fact is a pure function of the
 * text alone (whether it is base64, the digest of the bytes it decodes to, its PNG
 * header…), so one store serves every episode, as the image cache does: what one
 * client's text yields is what any other's equal text yields. Code without a hold
 * computes afresh, with the same answers.
 *
 * What is kept: per distinct text a small record (its digest and a few short values,
 * well under a kilobyte), at most `maxTexts` of them, least recently seen first out;
 * never the text itself between requests (a camera history's base64 is never held
 * twice). A request's hold lets go of its strings once the request is done.
 */

import type { FrameBlobs, FrameCounts, FrameText } from "./known-frame.ts";
import type { OffThreadSha256 } from "./sha256-off-thread.ts";

/** Strings shorter than this are never looked up: computing their facts costs less than the lookup. */
export const knownTextFromChars = 4096;

/** The facts derived so far from one text, by kind. */
export interface TextFacts {
  /** The SHA-256 (hex) of the text's bytes, with a suffix for a text derived from another (`#<offset>`). */
  readonly digest: string;
  readonly values: Map<string, unknown>;
}

/** The process's store of facts (the composition root creates it). */
export interface KnownTexts {
  /** A hold for one request's strings. */
  hold(): TextHold;
  /**
   * Strings registered by holds not yet released, texts whose facts are kept, facts reused
   * so far, frames kept as stand-ins (known-frame.ts) and stand-ins' texts rebuilt so far.
   */
  counts(): { live: number; kept: number; reused: number; standIns: number; materialised: number };
  /** Every kept fact let go of: the next requests derive everything afresh (the full path). */
  forget(): void;
  /** Where the body splitter hashes long strings, when not on the main thread (sha256-off-thread.ts). */
  readonly hashing?: OffThreadSha256;
}

/** One request's long strings, registered with their facts while the request is processed. */
export interface TextHold {
  /** The facts known for a text of this digest, made empty when none are. */
  factsOf(digest: string): TextFacts;
  /** Registers `text` as having `facts`, until the hold is released. */
  add(text: string, facts: TextFacts): void;
  /**
   * A fact about `text`: computed by `compute` (a pure function of the text alone) once per
   * distinct text while the text is registered here, else simply computed. A `compute` that
   * throws is not remembered. The fact must hold no piece of the text: a slice of a string
   * keeps the whole string alive (see `ownCopy`).
   */
  fact<T>(text: string, kind: string, compute: () => T): T;
  /** Where a known frame's text is rebuilt from (its blob), when frames may be kept as stand-ins (known-frame.ts). */
  readonly frames?: FrameBlobs;
  /** Where a stand-in of this request counts its reused facts and rebuilt texts. */
  readonly frameCounts?: FrameCounts & { standIn(): void };
  /** One more user of the hold (an exchange that outlives the request's route): released once more. */
  retain(): void;
  /** One user done; at the last, every string this hold registered is let go of. */
  release(): void;
}

/**
 * A fact of a long string's value: a stand-in's own (known-frame.ts), else `hold.fact(…)`
 * when there is a hold, else `compute(text)`. `compute` must use the text it is given
 * (a stand-in's is rebuilt only when the fact is not known).
 */
export function knownFact<T>(
  hold: TextHold | undefined,
  value: FrameText,
  kind: string,
  compute: (text: string) => T,
): T {
  if (typeof value !== "string") return value.fact(kind, compute);
  return hold === undefined ? compute(value) : hold.fact(value, kind, () => compute(value));
}

/** A short string as a string of its own, not a view into the (megabytes long) text it was cut from. */
export function ownCopy(text: string): string {
  return Buffer.from(text).toString();
}

/**
 * `frames`: the blob store a known frame's text can be rebuilt from; given it, the body
 * splitter keeps a frame whose facts are complete as a stand-in (known-frame.ts).
 * `hashing`: the worker the body splitter hashes long strings in (else on the main thread).
 */
export function createKnownTexts(
  maxTexts = 8192,
  frames?: FrameBlobs,
  hashing?: OffThreadSha256,
): KnownTexts {
  const byDigest = new Map<string, TextFacts>();
  let live = 0;
  let reused = 0;
  let standIns = 0;
  let materialised = 0;
  const frameCounts = {
    reused: () => {
      reused += 1;
    },
    materialised: () => {
      materialised += 1;
    },
    standIn: () => {
      standIns += 1;
    },
  };

  const factsOf = (digest: string): TextFacts => {
    let facts = byDigest.get(digest);
    if (facts === undefined) facts = { digest, values: new Map() };
    else byDigest.delete(digest);
    byDigest.set(digest, facts);
    if (byDigest.size > maxTexts) byDigest.delete(byDigest.keys().next().value as string);
    return facts;
  };

  return {
    hold() {
      const texts = new Map<string, TextFacts>();
      let users = 1;
      return {
        factsOf,
        frames,
        frameCounts,
        add(text, facts) {
          if (users === 0 || texts.has(text)) return;
          texts.set(text, facts);
          live += 1;
        },
        fact(text, kind, compute) {
          if (text.length < knownTextFromChars) return compute();
          const facts = texts.get(text);
          if (facts === undefined) return compute();
          if (facts.values.has(kind)) {
            reused += 1;
            return facts.values.get(kind) as ReturnType<typeof compute>;
          }
          const value = compute();
          facts.values.set(kind, value);
          return value;
        },
        retain() {
          if (users > 0) users += 1;
        },
        release() {
          if (users === 0) return;
          users -= 1;
          if (users > 0) return;
          live -= texts.size;
          texts.clear();
        },
      };
    },
    ...(hashing ? { hashing } : {}),
    counts: () => ({ live, kept: byDigest.size, reused, standIns, materialised }),
    forget() {
      for (const facts of byDigest.values()) facts.values.clear();
      byDigest.clear();
    },
  };
}
