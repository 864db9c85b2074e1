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
 * - A span that extends another (a history resent with items added: its text is the
 *   other's, a comma, then more) is scanned only past the other's text when the other's
 *   result is settled and its text, compared, is where it says: the comma begins outside
 *   any string, so the two results joined are the whole text's.
 */
import type { JsonText, KnownSpan } from "../lib/frozen-json.ts";
import type { KnownSpanScan, RecurringTexts } from "./text-references.ts";

/**
 * A piece of a spliced body: text between known spans, or a known span with its scan (and,
 * for a span first met, the settled scan of the span its text extends, checked).
 */
export type BodyPiece = { text: string; scan?: KnownSpanScan; extends?: KnownSpanScan };

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
      const base = extendedScan(own, span, texts);
      // A reference form has no comma: none lies across the one where the other text ends.
      const referenceForm = base
        ? base.referenceForm || hasReferenceForm(own.slice(base.text.length))
        : hasReferenceForm(own);
      scan = { text: own, referenceForm };
      texts.spans.set(span.key, scan);
      pieces.push(base ? { text: own, scan, extends: base } : { text: own, scan });
    } else pieces.push({ text: scan.text, scan });
    at = span.end;
  }
  if (at < text.length) pieces.push({ text: text.slice(at) });
  return pieces;
}

/** The settled scan of the span this one's text extends, when that text is where the span says. */
function extendedScan(own: string, span: KnownSpan, texts: RecurringTexts): KnownSpanScan | undefined {
  if (span.extends === undefined) return undefined;
  const base = texts.spans.get(span.extends.key);
  if (
    base?.externalized === undefined ||
    base.text.length !== span.extends.end ||
    own.charCodeAt(base.text.length) !== 44 /* , */ ||
    !own.startsWith(base.text)
  )
    return undefined;
  return base;
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
      const base = piece.extends;
      const externalized =
        base?.externalized !== undefined
          ? base.externalized + externalize(piece.text.slice(base.text.length))
          : externalize(piece.text);
      if (texts.firstSightings === before) scan.externalized = externalized;
      out.push(externalized);
    } else out.push(scan.externalized);
  }
  return out.length === 1 ? (out[0] as string) : out.join("");
}
