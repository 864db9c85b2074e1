/**
 * Known spans for a JSON text that repeats most of the previous one of its kind: the
 * upstream body of an episode's next turn is the last one's, byte for byte, up to where
 * the new messages go in. The episode keeps the last text as segments (pieces that begin
 * and end outside any string token, each with a key); a new text is compared with them
 * segment by segment (a memory compare), and the segments it begins with become its known
 * spans, so the records' scan of each (known-spans.ts) is reused. The rest of the text is
 * cut into new segments of about `segmentChars` for the next turn; a known span the text
 * already has there at least that long (a repeated tool list's JSON) stays one segment,
 * with its own key. A
 * text that differs early only reuses less: nothing is assumed equal that was not compared.
 * A text with images, or past `maxChars`, is not kept (its base64 is never held twice).
 */
import { closingQuote } from "../body/parse-json-body.ts";
import type { JsonText, KnownSpan } from "../lib/frozen-json.ts";
import { sameWidthCopy } from "../lib/same-width-copy.ts";

type Segment = { text: string; key: object };

/** One kind of text of one episode (its upstream bodies): the last one's segments. */
export type GrowingText = { segments: Segment[]; segmentChars: number };

export function createGrowingText(segmentChars = 8 * 1024): GrowingText {
  return { segments: [], segmentChars };
}

export const maxChars = 4 * 1024 * 1024;

/**
 * The text's known spans: the kept segments it begins with, then the text's own spans
 * after them. Keeps this text's segments for the next call (none when `keep` is false).
 */
export function knownSpansOfGrowingText(state: GrowingText, json: JsonText, keep = true): JsonText {
  const { text } = json;
  const reused: KnownSpan[] = [];
  let at = 0;
  for (const segment of state.segments) {
    if (!text.startsWith(segment.text, at)) break;
    reused.push({
      start: at,
      end: at + segment.text.length,
      key: segment.key,
      text: segment.text,
      compared: true,
    });
    at += segment.text.length;
  }
  const own = json.known.filter((span) => span.start >= at);
  const kept: Segment[] = [];
  if (keep && text.length <= maxChars) {
    // A span's key stands for one text: its segment from the last text is reused, once compared.
    const byKey = new Map(state.segments.slice(reused.length).map((segment) => [segment.key, segment]));
    kept.push(...state.segments.slice(0, reused.length));
    let from = at;
    // A short known span (one resent message's JSON) goes into the segments around it:
    // a segment of its own would only add bookkeeping per message on every turn.
    const long = own.filter((span) => span.end - span.start >= state.segmentChars);
    for (const span of [...long, { start: text.length, end: text.length, key: {} }]) {
      for (const cut of cutsOutsideStrings(text, from, span.start, state.segmentChars)) {
        kept.push({ text: copy(text.slice(from, cut)), key: {} });
        from = cut;
      }
      if (span.end > span.start) kept.push(segmentOf(span, text, byKey));
      from = span.end;
    }
  }
  state.segments = kept;
  if (reused.length === 0) return json;
  // The new segments become known spans on the next turn, once compared.
  return { text, known: [...reused, ...own] };
}

/** The segment of a known span: the kept one with its key when it reads the same, else a copy. */
function segmentOf(span: KnownSpan, text: string, byKey: Map<object, Segment>): Segment {
  const kept = byKey.get(span.key);
  if (
    kept !== undefined &&
    kept.text.length === span.end - span.start &&
    text.startsWith(kept.text, span.start)
  )
    return kept;
  return { text: copy(text.slice(span.start, span.end)), key: span.key };
}

/** A flat copy in the body's width: a slice would keep the whole body alive with the segment. */
const copy = sameWidthCopy;

/**
 * Where to cut the text from `from` to `end` (both outside any string token): before a
 * string token's opening quote, about every `segmentChars`, then at `end`.
 */
function cutsOutsideStrings(text: string, from: number, end: number, segmentChars: number): number[] {
  const cuts: number[] = [];
  let last = from;
  for (let at = text.indexOf('"', from); at >= 0 && at < end; ) {
    if (at - last >= segmentChars) {
      cuts.push(at);
      last = at;
    }
    const close = closingQuote(text, at);
    if (close < 0) break;
    at = text.indexOf('"', close + 1);
  }
  if (end > last) cuts.push(end);
  return cuts;
}
