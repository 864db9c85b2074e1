/**
 * What was derived from a request's long strings (a camera history's base64 frames),
 * kept across requests by the SHA-256 of each string's text, so that a frame resent
 * on every turn is not scanned, checked and hashed again by every stage on every turn.
 *
 * The identity is verified, never assumed: a string's facts are found by its exact
 * content. While a request is processed, its long strings are registered here by the
 * body splitter (split-json-bytes.ts), which computes the SHA-256 of each one's bytes
 * as they arrive; a stage looks a string up by its value (a Map compares the whole
 * content on a hit). Across requests the facts are found by that SHA-256 of the text:
 * two different texts with the same digest would be a SHA-256 collision, which nobody
 * can produce. Each fact is a pure function of the text alone (whether it is base64,
 * the digest of the bytes it decodes to, its PNG header…), so the facts are shared by
 * every episode: what one client's text yields is what any other's equal text yields.
 *
 * What is kept: per distinct text a small record (its digest and a few short values,
 * well under a kilobyte), at most `maxKnownTexts` of them, least recently seen first
 * out; never the text itself between requests (a camera history's base64 is never
 * held twice). The strings registered for a request are let go of when the request
 * is done (`TextHold.release`), so this holds no request's strings past its exchange.
 */

/** Strings shorter than this are never looked up: computing their facts costs less than the lookup. */
export const knownTextFromChars = 4096;

/** How many distinct texts' facts are kept (each well under a kilobyte). */
export const maxKnownTexts = 8192;

/** The facts derived so far from one text, by kind. */
export interface TextFacts {
  /** The SHA-256 (hex) of the text's bytes, with a suffix for a text derived from another (`#payload`). */
  readonly digest: string;
  readonly values: Map<string, unknown>;
}

const byDigest = new Map<string, TextFacts>();
const live = new Map<string, { facts: TextFacts; holds: number }>();
let reused = 0;

/** The facts known for a text of this digest, made empty when none are. */
export function factsOfDigest(digest: string): TextFacts {
  let facts = byDigest.get(digest);
  if (facts === undefined) facts = { digest, values: new Map() };
  else byDigest.delete(digest);
  byDigest.set(digest, facts);
  if (byDigest.size > maxKnownTexts) {
    const oldest = byDigest.keys().next().value as string;
    byDigest.delete(oldest);
  }
  return facts;
}

/**
 * A fact about `text`: computed by `compute` (a pure function of the text alone) once
 * per distinct text while the text is registered by a request in process, else simply
 * computed. A `compute` that throws is not remembered. The fact must hold no piece of
 * the text: a slice of a string keeps the whole string alive (see `ownCopy`).
 */
export function knownFact<T>(text: string, kind: string, compute: () => T): T {
  if (text.length < knownTextFromChars) return compute();
  const facts = live.get(text)?.facts;
  if (facts === undefined) return compute();
  if (facts.values.has(kind)) {
    reused += 1;
    return facts.values.get(kind) as T;
  }
  const value = compute();
  facts.values.set(kind, value);
  return value;
}

/** A short string as a string of its own, not a view into the (megabytes long) text it was cut from. */
export function ownCopy(text: string): string {
  return Buffer.from(text).toString();
}

/** The strings one request registered: held while the request is processed, let go of once it is done. */
export interface TextHold {
  /** Registers `text` (until the hold is released) as having `facts`. */
  add(text: string, facts: TextFacts): void;
  /** One more user of the hold (an exchange that outlives the request's route): released once more. */
  retain(): void;
  /** One user done; at the last, every string this hold registered is let go of. */
  release(): void;
}

export function holdTexts(): TextHold {
  const texts: string[] = [];
  let users = 1;
  return {
    add(text, facts) {
      const entry = live.get(text);
      if (entry !== undefined) entry.holds += 1;
      else live.set(text, { facts, holds: 1 });
      texts.push(text);
    },
    retain() {
      if (users > 0) users += 1;
    },
    release() {
      if (users === 0) return;
      users -= 1;
      if (users > 0) return;
      for (const text of texts) {
        const entry = live.get(text);
        if (entry === undefined) continue;
        entry.holds -= 1;
        if (entry.holds === 0) live.delete(text);
      }
      texts.length = 0;
    },
  };
}

/**
 * How many strings the requests in process hold registered (none once every request is
 * done), how many texts' facts are kept, and how many facts were reused so far.
 */
export function knownTextCounts(): { live: number; kept: number; reused: number } {
  return { live: live.size, kept: byDigest.size, reused };
}

/** Every kept fact let go of: the next requests derive everything afresh (the full path). */
export function forgetKnownTexts(): void {
  byDigest.clear();
  for (const entry of live.values()) entry.facts = { digest: entry.facts.digest, values: new Map() };
}
