/**
 * Most of a large spliced body is often text a record line had before: Claude
 * Code's 63 KB tool list, resent byte for byte every turn, and the same list again
 * in the upstream body. The ingress already knows where such text lies (a member
 * parsed once per episode, the JSON of a frozen value: `KnownSpan`), so the
 * records scan each span for images, reference forms and long strings seen before
 * once per span key, not on every line, and splice in what that scan gave.
 * - A span begins and ends outside any string token, so each piece of the text is
 *   scanned on its own with the result the scan of the whole text gives (both
 *   scans read string tokens from a point outside a string).
 * - A span's result is kept only once it is settled: every long string in it was
 *   stored already (RecurringTexts.firstSightings did not move), so a later scan
 *   would give the same text. References point at blobs, which are never removed.
 * - A key stands for one text; the text is still compared before a result is reused.
 */
import type { JsonText } from "../lib/frozen-json.ts";
import type { KnownSpanScan, RecurringTexts } from "./text-references.ts";

/** A piece of a spliced body: text between known spans, or a known span with its scan. */
export type BodyPiece = { text: string; scan?: KnownSpanScan };

/** The body cut at its known spans; each span's scan kept in `texts` (none: the whole text is one piece). */
export function bodyPieces(
  json: string | JsonText,
  texts: RecurringTexts | undefined,
  hasReferenceForm: (text: string) => boolean,
): BodyPiece[] {
  if (typeof json === "string") return [{ text: json }];
  if (texts === undefined || json.known.length === 0) return [{ text: json.text }];
  const { text } = json;
  const pieces: BodyPiece[] = [];
  let at = 0;
  for (const span of json.known) {
    if (span.start > at) pieces.push({ text: text.slice(at, span.start) });
    let scan = texts.spans.get(span.key);
    if (
      scan === undefined ||
      scan.text.length !== span.end - span.start ||
      !text.startsWith(scan.text, span.start)
    ) {
      // The text its knower holds, when it is the span's (one string for both); else a flat
      // copy: a slice would keep this whole body alive with the key.
      const own =
        span.text !== undefined &&
        span.text.length === span.end - span.start &&
        text.startsWith(span.text, span.start)
          ? span.text
          : Buffer.from(text.slice(span.start, span.end)).toString();
      scan = { text: own, referenceForm: hasReferenceForm(own) };
      texts.spans.set(span.key, scan);
    }
    pieces.push({ text: scan.text, scan });
    at = span.end;
  }
  if (at < text.length) pieces.push({ text: text.slice(at) });
  return pieces;
}

/** `externalize` of each piece, joined: a known span's settled result reused, an unsettled one scanned again. */
export function externalizePieces(
  pieces: BodyPiece[],
  texts: RecurringTexts | undefined,
  externalize: (text: string) => string,
): string {
  const out: string[] = [];
  for (const piece of pieces) {
    const { scan } = piece;
    if (scan === undefined || texts === undefined) {
      out.push(externalize(piece.text));
      continue;
    }
    if (scan.externalized === undefined) {
      const before = texts.firstSightings;
      const externalized = externalize(piece.text);
      if (texts.firstSightings === before) scan.externalized = externalized;
      out.push(externalized);
    } else out.push(scan.externalized);
  }
  return out.length === 1 ? (out[0] as string) : out.join("");
}
