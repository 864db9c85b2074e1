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
 * - A key stands for one text; the text is still compared before a result is reused,
 *   by the records or, for a span marked `compared`, by its knower: the parse compared
 *   the history and members it reuses with the body, the last upstream body's segments
 *   were compared with the new one, a frozen value's JSON was put there by its builder.
 *   A scan holding those very strings is then taken as read (each body's text compared
 *   once, not twice: two full compares of a long history were most of a line's growth).
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
export type BodyPiece = {
  /** The piece's text (a known span's may be a slice of the body: only read while the line is made). */
  text: string;
  scan?: KnownSpanScan;
  /** The settled scan this span's text begins with, and the rest of the text after it (its own string). */
  extends?: { scan: KnownSpanScan; rest: string };
};

/** The length of these strings joined by commas. */
export function joinedLength(parts: readonly string[]): number {
  let length = parts.length - 1;
  for (const part of parts) length += part.length;
  return length;
}

/** Whether two lists hold the same strings (the very same ones, as a rule: a compare of pointers). */
function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((part, i) => part === b[i]));
}

/** Whether `text` reads `parts` joined by commas at `at` (a compare per part, nothing joined). */
function readsAt(text: string, at: number, parts: readonly string[]): boolean {
  let from = at;
  for (const [i, part] of parts.entries()) {
    if (i > 0) {
      if (text.charCodeAt(from) !== 44 /* , */) return false;
      from += 1;
    }
    if (!text.startsWith(part, from)) return false;
    from += part.length;
  }
  return true;
}

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
    const length = span.end - span.start;
    const known = span.parts ?? (span.text === undefined ? undefined : [span.text]);
    // The knower compared its strings with the body here: a scan of the same strings needs no compare.
    const read = (parts: readonly string[]) =>
      joinedLength(parts) === length &&
      ((span.compared === true && known !== undefined && sameStrings(parts, known)) ||
        readsAt(text, span.start, parts));
    let scan = texts.spans.get(span.key);
    if (scan === undefined || scan.length !== length || !read(scan.parts)) {
      // The text its knower holds, when it is the span's (the same strings for both); else a
      // flat copy: a slice would keep this whole body alive with the key.
      const parts =
        known !== undefined && read(known)
          ? known
          : [Buffer.from(text.slice(span.start, span.end)).toString()];
      const base = extendedScan(text, span, parts, texts);
      // A reference form has no comma: none lies across the one where the other text ends.
      const referenceForm = base
        ? base.referenceForm || hasReferenceForm(text.slice(span.start + base.length, span.end))
        : parts.some(hasReferenceForm);
      scan = { parts, length, referenceForm };
      texts.spans.set(span.key, scan);
      const own = parts.length === 1 ? (parts[0] as string) : text.slice(span.start, span.end);
      pieces.push(
        base
          ? { text: own, scan, extends: { scan: base, rest: restAfter(base, parts, text, span) } }
          : { text: own, scan },
      );
    } else
      pieces.push({
        text: scan.parts.length === 1 ? (scan.parts[0] as string) : text.slice(span.start, span.end),
        scan,
      });
    at = span.end;
  }
  if (at < text.length) pieces.push({ text: text.slice(at) });
  return pieces;
}

/**
 * The settled scan of the span this one's text extends, when its text is there in the body,
 * then a comma. The span's own parts were just compared with the body: when they begin with
 * the base's very strings, that compare was the base's too.
 */
function extendedScan(
  text: string,
  span: KnownSpan,
  parts: readonly string[],
  texts: RecurringTexts,
): KnownSpanScan | undefined {
  if (span.extends === undefined) return undefined;
  const base = texts.spans.get(span.extends.key);
  if (
    base?.externalized === undefined ||
    base.length !== span.extends.end ||
    span.extends.end >= span.end - span.start ||
    text.charCodeAt(span.start + base.length) !== 44 /* , */ ||
    !(beginsWithParts(parts, base.parts) || readsAt(text, span.start, base.parts))
  )
    return undefined;
  return base;
}

/** Whether `parts` begin with the very strings of `first` (and have more). */
function beginsWithParts(parts: readonly string[], first: readonly string[]): boolean {
  return parts.length > first.length && first.every((part, i) => parts[i] === part);
}

/**
 * The span's text after the base's, as a string of its own (a result made from a slice of
 * the body could keep the body alive): the parts after the base's, when the span's parts
 * begin with the same strings, else a copy.
 */
function restAfter(base: KnownSpanScan, parts: readonly string[], text: string, span: KnownSpan): string {
  if (beginsWithParts(parts, base.parts)) return `,${parts.slice(base.parts.length).join(",")}`;
  return Buffer.from(text.slice(span.start + base.length, span.end)).toString();
}

/**
 * `externalize` of each piece, pushed onto `out` (the line's parts, joined once by the
 * writer): a known span's settled result reused, an unsettled one scanned again.
 */
export function externalizePieces(
  pieces: BodyPiece[],
  texts: RecurringTexts | undefined,
  externalize: (text: string) => string,
  out: string[],
): void {
  for (const piece of pieces) {
    const { scan } = piece;
    if (scan === undefined || texts === undefined) {
      out.push(externalize(piece.text));
      continue;
    }
    if (scan.externalized === undefined) {
      const before = texts.firstSightings;
      const base = piece.extends;
      // The whole text as one string of its own: the knower's, or its parts joined.
      const whole = () => (scan.parts.length === 1 ? (scan.parts[0] as string) : scan.parts.join(","));
      const externalized =
        base?.scan.externalized !== undefined
          ? base.scan.externalized + externalize(base.rest)
          : externalize(whole());
      if (texts.firstSightings === before) scan.externalized = externalized;
      out.push(externalized);
    } else out.push(scan.externalized);
  }
}
