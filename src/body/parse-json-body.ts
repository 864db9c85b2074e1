/**
 * Parses a client's JSON body for any ingress. A body nested deeper than
 * `maxJsonDepth` is refused before JSON.parse: the parse itself would succeed,
 * but recording and translating such a value recurses past the stack (a 500 and
 * a lost record). The depth scan is iterative and linear.
 *
 * Clients resend some top-level members byte for byte every turn (Claude Code's
 * 63 KB tool list is three quarters of its request). Given an episode's
 * `RepeatedMembers`, a member whose text is the one seen before is not scanned or
 * parsed again: its earlier value, deep-frozen, takes its place (and the later
 * stages reuse what they derived from that value, see frozen-json.ts).
 */

import { errorMessage } from "../lib/error-message.ts";
import { deepFreeze, type KnownSpan } from "../lib/frozen-json.ts";
import { parseSplit, sharingFromChars } from "./parse-sharing-base64.ts";
import { hasLongBase64String, type SplitText, splitText, unsplit, wholeText } from "./split-text.ts";

export const maxJsonDepth = 512;

/**
 * The body as parsed, always with the exact text received (the records keep that text),
 * split: its long base64 strings apart from the rest (split-text.ts); and where that
 * text repeats a member known from an earlier request (offsets in its reduced text).
 */
export type JsonBody =
  | { parsed: true; value: unknown; received: SplitText; known?: readonly KnownSpan[] }
  | { parsed: false; received: SplitText; reason: string };

/** A top-level member's value as one request carried it: its exact text, parsed value (frozen), nesting depth. */
export type KnownMember = { text: string; value: object; depth: number };

/** One episode's memory of the members its client repeats, by member name (the latest text of each). */
export type RepeatedMembers = {
  names: readonly string[];
  known: Map<string, KnownMember>;
};

/** Members shorter than this are parsed every time: reusing them saves less than it costs. */
const smallestRepeatedMember = 1024;

export function createRepeatedMembers(names: readonly string[]): RepeatedMembers {
  return { names, known: new Map() };
}

/** One RepeatedMembers per owner (an episode), living no longer than it does. */
export function repeatedMembersPer<Owner extends object>(
  names: readonly string[],
): (owner: Owner) => RepeatedMembers {
  const members = new WeakMap<Owner, RepeatedMembers>();
  return (owner) => {
    let known = members.get(owner);
    if (known === undefined) {
      known = createRepeatedMembers(names);
      members.set(owner, known);
    }
    return known;
  };
}

const repeatedValues = new WeakSet<object>();

/** Whether `value` is a repeated member's value (deep-frozen, the same object on every turn that resends it). */
export function isRepeatedMember(value: unknown): value is object {
  return value !== null && typeof value === "object" && repeatedValues.has(value);
}

/** Where a string that opens at `start` (a quote) closes: the next quote preceded by an even number of backslashes; -1 if never. */
export function closingQuote(text: string, start: number): number {
  let end = text.indexOf('"', start + 1);
  while (end > 0) {
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === 92 /* \ */) backslashes++;
    if (backslashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return -1;
}

/**
 * The deepest array/object nesting in JSON text (strings skipped), without recursion.
 * A string is skipped by searching for its closing quote rather than stepping through
 * it character by character: request bodies are mostly long base64 strings.
 */
export function jsonNestingDepth(text: string): number {
  return scanJson(text).depth;
}

type MemberSpan = { start: number; end: number; known?: KnownMember };

type Scan = {
  depth: number;
  /** The wanted top-level members of a root object, by name; none when a key repeats or is escaped. */
  members: Map<string, MemberSpan>;
};

function isJsonSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

/**
 * One pass over the text: its nesting depth and, for the root object's members
 * named in `repeated`, where each value's text lies. A value whose text is the
 * known one is jumped over (its depth is known).
 */
function scanJson(text: string, repeated?: RepeatedMembers): Scan {
  let depth = 0;
  let deepest = 0;
  const members = new Map<string, MemberSpan>();
  // Tracking members is only for a root object, and stops (members dropped) at a
  // key JSON.parse could read differently from its text: a repeated or escaped one.
  let tracking = repeated !== undefined && repeated.names.length > 0;
  const seenKeys = new Set<string>();
  let expectKey = false;
  let key: string | undefined;
  let open: MemberSpan | undefined;
  const closeMember = (at: number) => {
    if (open === undefined) return;
    let end = at;
    while (end > open.start && isJsonSpace(text.charCodeAt(end - 1))) end--;
    open.end = end;
    open = undefined;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      const end = closingQuote(text, i);
      if (end < 0) return { depth: deepest, members: new Map() };
      if (tracking && depth === 1 && expectKey) {
        key = text.slice(i + 1, end);
        expectKey = false;
        if (key.includes("\\") || seenKeys.has(key)) tracking = false;
        seenKeys.add(key);
      }
      i = end;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (depth === 1) {
        expectKey = c === 123;
        if (c === 91) tracking = false;
      }
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      if (depth === 1) closeMember(i);
      depth--;
    } else if (depth === 1 && tracking) {
      if (c === 44 /* , */) {
        closeMember(i);
        expectKey = true;
        key = undefined;
      } else if (c === 58 /* : */ && key !== undefined && repeated?.names.includes(key)) {
        let start = i + 1;
        while (start < text.length && isJsonSpace(text.charCodeAt(start))) start++;
        const known = repeated.known.get(key);
        if (known !== undefined && text.startsWith(known.text, start)) {
          members.set(key, { start, end: start + known.text.length, known });
          if (1 + known.depth > deepest) deepest = 1 + known.depth;
          i = start + known.text.length - 1;
        } else {
          open = { start, end: start };
          members.set(key, open);
        }
        key = undefined;
      }
    }
  }
  return { depth: deepest, members: tracking ? members : new Map() };
}

function invalidJson(error: unknown, received: SplitText): JsonBody {
  return { parsed: false, received, reason: `request body is not valid JSON (${errorMessage(error)})` };
}

/**
 * Parses a body: given as the text received, or split as the server's receiver
 * splits it (its long base64 strings then go into the value as they are).
 */
export function parseJsonBody(body: string | SplitText, repeated?: RepeatedMembers): JsonBody {
  const received =
    typeof body !== "string" ? body : body.length >= sharingFromChars ? splitText(body) : unsplit(body);
  // Scanned and parsed in its reduced form: a placeholder is a string token where a string token was.
  const text = received.reduced;
  const scan = scanJson(text, repeated);
  if (scan.depth > maxJsonDepth) {
    return {
      parsed: false,
      received,
      reason: `request body nests ${scan.depth} levels deep, over the limit of ${maxJsonDepth}`,
    };
  }
  const reused = [...scan.members].filter(([, span]) => span.known !== undefined);
  let value: unknown;
  try {
    const parsed = parseSplit(reused.length === 0 ? text : withoutReused(text, reused), received);
    // A placeholder that did not come back as one whole value: the text is parsed as received.
    if (parsed === undefined) return parseJsonBody(unsplit(wholeText(received)), repeated);
    value = parsed.value;
  } catch (error) {
    // The message JSON.parse gives for the text as received, not for the shortened one.
    try {
      JSON.parse(wholeText(received));
    } catch (original) {
      return invalidJson(original, received);
    }
    return invalidJson(error, received);
  }
  if (repeated !== undefined && value !== null && typeof value === "object" && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    for (const [name, span] of scan.members) {
      if (span.known !== undefined) object[name] = span.known.value;
      else remember(repeated, name, text.slice(span.start, span.end), object[name], received.nonce);
    }
  }
  if (reused.length === 0) return { parsed: true, value, received };
  // Keyed by the member as known (its text and value): the same key, the same text.
  const known = reused
    .map(([, span]) => ({ start: span.start, end: span.end, key: span.known as KnownMember }))
    .sort((a, b) => a.start - b.start);
  return { parsed: true, value, received, known };
}

/** The text with each reused member's value replaced by `null`: the rest is parsed, the reused values put back after. */
function withoutReused(text: string, reused: [string, MemberSpan][]): string {
  const spans = reused.map(([, span]) => span).sort((a, b) => a.start - b.start);
  let out = "";
  let at = 0;
  for (const span of spans) {
    out += `${text.slice(at, span.start)}null`;
    at = span.end;
  }
  return out + text.slice(at);
}

function remember(
  repeated: RepeatedMembers,
  name: string,
  text: string,
  value: unknown,
  nonce: string,
): void {
  if (text.length < smallestRepeatedMember || value === null || typeof value !== "object") return;
  // Its long base64 strings would be this request's (taken out, or views into its text), kept alive with the value.
  if ((nonce !== "" && text.includes(nonce)) || hasLongBase64String(text)) return;
  deepFreeze(value);
  repeatedValues.add(value);
  // A flat copy: a slice may keep the whole request text (megabytes of images) alive with it.
  const copy = JSON.parse(JSON.stringify(text)) as string;
  repeated.known.set(name, { text: copy, value, depth: jsonNestingDepth(copy) });
}

/** A value as the body a client would send: its JSON text, parsed the way a route parses it. */
export function jsonBodyOf(value: unknown): JsonBody {
  return parseJsonBody(JSON.stringify(value));
}
