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
 *
 * The history member (Claude Code's `messages`, Gemini's `contents`, the Responses
 * `input`) grows by a few items a turn and is resent whole. Given its name, the
 * episode keeps the items of the latest history as text and frozen value, and a
 * later body whose history begins with the same items, byte for byte, each followed
 * by `,` or `]`, reuses their values: only the items after them are scanned and
 * parsed. The bytes are compared (memory speed), never assumed: the first item that
 * differs (the client compacted, edited or dropped one) and every item after it is
 * parsed afresh. Each reused item is a known span, so the records reuse their scan of it.
 *
 * A client that only appends resends the whole of the last history first: the episode
 * also keeps that history's items as one text (`KnownPrefix`, when it was sent compact),
 * so such a body is recognised in one compare rather than one per item, and the reused
 * items are one known span, which names the prefix it grew from (`extends`): the records
 * then scan only what the last turn added to it (known-spans.ts).
 */

import { errorMessage } from "../lib/error-message.ts";
import { deepFreeze, type KnownSpan } from "../lib/frozen-json.ts";
import { createFrozenMemos, type FrozenMemos } from "../lib/frozen-memos.ts";
import { joinedCopy, sameWidthCopy } from "../lib/same-width-copy.ts";
import { parseSplit, sharingFromChars } from "./parse-sharing-base64.ts";
import { hasLongBase64String, type SplitText, splitText, unsplit, wholeText } from "./split-text.ts";

export const maxJsonDepth = 512;

/**
 * The body as parsed, always with the exact text received (the records keep that text),
 * split: its long base64 strings apart from the rest (split-text.ts); and where that
 * text repeats a member known from an earlier request (offsets in its reduced text).
 */
export type JsonBody =
  | {
      parsed: true;
      value: unknown;
      received: SplitText;
      known?: readonly KnownSpan[];
      /** The episode's memos, which know its repeated members' values (given RepeatedMembers). */
      memos?: FrozenMemos;
    }
  | { parsed: false; received: SplitText; reason: string };

/** A top-level member's value as one request carried it: its exact text, parsed value (frozen), nesting depth. */
export type KnownMember = { text: string; value: object; depth: number };

/** One episode's memory of the members its client repeats, by member name (the latest text of each). */
export type RepeatedMembers = {
  names: readonly string[];
  /** The episode's memos: each repeated member's value is marked there (isRepeated). */
  memos: FrozenMemos;
  known: Map<string, KnownMember>;
  /** The history member's name, when its items are reused. */
  history?: string;
  /** The latest history's items, in order (none: the next history is parsed whole). */
  items?: readonly KnownItem[];
  /** The same items as one text, when the history was sent compact (none: compared item by item). */
  prefix?: KnownPrefix;
};

/**
 * A history's items as one text, exactly as sent: the items joined by commas, held in
 * runs (the items a turn added, joined: the episode's own strings, each item's text a
 * slice of its run), so that a longer history is never copied whole. Its `key` stands for
 * that text (the records' scan of it is kept by it); `extends` names the prefix of the
 * history before, when this one is that one's text, a comma, and more items.
 */
export type KnownPrefix = {
  /** The runs: joined by commas, they are the text. */
  chunks: readonly string[];
  /** The text's length. */
  chars: number;
  /** How many items the text holds, and their deepest nesting. */
  items: number;
  depth: number;
  key: object;
  extends?: { key: object; end: number };
};

/** One item of a history as a request carried it: its exact text and its parsed value (frozen), its nesting depth. */
export type KnownItem = { text: string; value: unknown; depth: number };

/**
 * A history is kept only while its items' text stays under this: the episode holds
 * that text and the values once more between turns (docs/design.md). A longer one
 * is parsed whole, as is any history holding images (their base64 is never kept).
 */
export const maxKeptHistoryChars = 4 * 1024 * 1024;

/** A prefix of more runs than this is joined into one at its next growth (a compare per run, a copy now and then). */
const maxPrefixChunks = 64;

/** Members shorter than this are parsed every time: reusing them saves less than it costs. */
const smallestRepeatedMember = 1024;

export function createRepeatedMembers(
  names: readonly string[],
  history?: string,
  memos: FrozenMemos = createFrozenMemos(),
): RepeatedMembers {
  return history === undefined
    ? { names, memos, known: new Map() }
    : { names, memos, known: new Map(), history };
}

/** One RepeatedMembers per owner (an episode, with its memos), living no longer than it does. */
export function repeatedMembersPer<Owner extends { readonly memos: FrozenMemos }>(
  names: readonly string[],
  history?: string,
): (owner: Owner) => RepeatedMembers {
  const members = new WeakMap<Owner, RepeatedMembers>();
  return (owner) => {
    let known = members.get(owner);
    if (known === undefined) {
      known = createRepeatedMembers(names, history, owner.memos);
      members.set(owner, known);
    }
    return known;
  };
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

type MemberSpan = {
  start: number;
  end: number;
  known?: KnownMember;
  /** The history member: how many leading items are the known ones, and where the last of them ends. */
  reused?: { items: number; end: number; prefix?: KnownPrefix };
};

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
  let tracking = repeated !== undefined && (repeated.names.length > 0 || repeated.history !== undefined);
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
      } else if (c === 58 /* : */ && key !== undefined && key === repeated?.history) {
        let start = i + 1;
        while (start < text.length && isJsonSpace(text.charCodeAt(start))) start++;
        open = { start, end: start };
        members.set(key, open);
        const reused = reusedPrefix(text, start, repeated.prefix) ?? reusedItems(text, start, repeated.items);
        if (reused !== undefined) {
          open.reused = { items: reused.items, end: reused.end };
          if (reused.prefix !== undefined) open.reused.prefix = reused.prefix;
          // Inside the array, past its known items: the scan goes on from the separator after them.
          depth = 2;
          if (2 + reused.depth > deepest) deepest = 2 + reused.depth;
          i = reused.end - 1;
        }
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

/** How many known items a history begins with, where the last of them ends, their deepest nesting, and the prefix that held them. */
type ReusedItems = { items: number; end: number; depth: number; prefix?: KnownPrefix };

/**
 * The known prefix, when the array at `start` begins with its text, byte for byte, followed
 * by `,` or `]` (then the array holds exactly those items there): all of its items in one compare.
 */
function reusedPrefix(text: string, start: number, prefix: KnownPrefix | undefined): ReusedItems | undefined {
  if (prefix === undefined || text.charCodeAt(start) !== 91 /* [ */) return undefined;
  let at = start + 1;
  for (const [i, chunk] of prefix.chunks.entries()) {
    if (i > 0) {
      if (text.charCodeAt(at) !== 44 /* , */) return undefined;
      at += 1;
    }
    if (!text.startsWith(chunk, at)) return undefined;
    at += chunk.length;
  }
  const end = at;
  const next = text.charCodeAt(end);
  if (next !== 44 /* , */ && next !== 93 /* ] */) return undefined;
  return { items: prefix.items, end, depth: prefix.depth, prefix };
}

/**
 * How many of the known items the array at `start` begins with, byte for byte, each
 * followed by `,` or `]` (then the array holds exactly that item there), where the
 * last of them ends (at its separator), and their deepest nesting; undefined when not even the first.
 */
function reusedItems(
  text: string,
  start: number,
  items: readonly KnownItem[] | undefined,
): ReusedItems | undefined {
  if (items === undefined || items.length === 0 || text.charCodeAt(start) !== 91 /* [ */) return undefined;
  let at = start + 1;
  let count = 0;
  let depth = 0;
  let end = at;
  for (const item of items) {
    if (!text.startsWith(item.text, at)) break;
    const next = text.charCodeAt(at + item.text.length);
    if (next !== 44 /* , */ && next !== 93 /* ] */) break;
    count++;
    end = at + item.text.length;
    if (item.depth > depth) depth = item.depth;
    if (next === 93) break;
    at = end + 1;
  }
  return count === 0 ? undefined : { items: count, end, depth };
}

/**
 * The items of the array whose text runs from `from` (just after `[`, or at the `,`
 * after a reused item) to `end` (its `]`): each item's start and end, outside any string,
 * and its deepest nesting (jsonNestingDepth of its text, found on the same pass).
 */
function arrayItems(
  text: string,
  from: number,
  end: number,
): { start: number; end: number; depth: number }[] {
  const items: { start: number; end: number; depth: number }[] = [];
  let depth = 0;
  let deepest = 0;
  let start = -1;
  const close = (at: number) => {
    if (start < 0) return;
    let last = at;
    while (last > start && isJsonSpace(text.charCodeAt(last - 1))) last--;
    items.push({ start, end: last, depth: deepest });
    start = -1;
    deepest = 0;
  };
  for (let i = from; i < end; i++) {
    const c = text.charCodeAt(i);
    if (depth === 0 && start < 0 && c !== 44 && !isJsonSpace(c)) start = i;
    if (c === 34 /* " */) {
      i = closingQuote(text, i);
      if (i < 0) return [];
    } else if (c === 123 || c === 91) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (c === 125 || c === 93) depth--;
    else if (c === 44 /* , */ && depth === 0) close(i);
  }
  close(end);
  return items;
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
  const history = repeated?.history === undefined ? undefined : scan.members.get(repeated.history);
  const cuts = reused.map(([, span]) => ({ start: span.start, end: span.end, by: "null" }));
  if (history?.reused !== undefined) {
    // The reused items and the comma after them are left out: `[` and the new items are parsed.
    const { end } = history.reused;
    cuts.push({ start: history.start + 1, end: text.charCodeAt(end) === 44 ? end + 1 : end, by: "" });
  }
  let value: unknown;
  try {
    const parsed = parseSplit(cuts.length === 0 ? text : withCuts(text, cuts), received);
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
  const known: KnownSpan[] = [];
  if (repeated !== undefined && value !== null && typeof value === "object" && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    for (const [name, span] of scan.members) {
      if (name === repeated.history) continue;
      if (span.known !== undefined) object[name] = span.known.value;
      else remember(repeated, name, text.slice(span.start, span.end), object[name], received.nonce);
    }
    // Keyed by the member as known (its text and value): the same key, the same text.
    for (const [, span] of reused)
      known.push({
        start: span.start,
        end: span.end,
        key: span.known as KnownMember,
        text: span.known?.text,
        compared: true,
      });
    if (repeated.history !== undefined) {
      const items =
        history === undefined ? undefined : historyItems(text, history, object, repeated, received.nonce);
      for (const item of items?.reused ?? []) known.push(item);
    }
  } else if (repeated?.history !== undefined) {
    repeated.items = undefined;
    repeated.prefix = undefined;
  }
  const parsedBody: Extract<JsonBody, { parsed: true }> = { parsed: true, value, received };
  if (known.length > 0) parsedBody.known = known.sort((a, b) => a.start - b.start);
  if (repeated !== undefined) parsedBody.memos = repeated.memos;
  return parsedBody;
}

/**
 * The history member after the parse: its reused items put back in front of the new
 * ones, the episode's items replaced by this history's, and where each reused item
 * lies (a known span, keyed by the item). A history that is not an array, holds
 * images or is too long to keep leaves the episode with no items.
 */
function historyItems(
  text: string,
  span: MemberSpan,
  object: Record<string, unknown>,
  repeated: RepeatedMembers,
  nonce: string,
): { reused: KnownSpan[] } | undefined {
  const before = repeated.items ?? [];
  const beforePrefix = span.reused?.prefix;
  repeated.items = undefined;
  repeated.prefix = undefined;
  const parsed = object[repeated.history as string];
  const count = span.reused?.items ?? 0;
  if (count > 0)
    object[repeated.history as string] = [
      ...before.slice(0, count).map((item) => item.value),
      ...(parsed as unknown[]),
    ];
  const reused: KnownSpan[] = [];
  let at = span.start + 1;
  if (beforePrefix !== undefined) {
    const { key, chunks, chars } = beforePrefix;
    reused.push({ start: at, end: at + chars, key, parts: chunks, compared: true });
    if (beforePrefix.extends !== undefined) (reused[0] as KnownSpan).extends = beforePrefix.extends;
  } else
    for (const item of before.slice(0, count)) {
      reused.push({ start: at, end: at + item.text.length, key: item, text: item.text, compared: true });
      at += item.text.length + 1;
    }
  if (!Array.isArray(parsed) || span.end <= span.start || text.charCodeAt(span.end - 1) !== 93 /* ] */)
    return { reused };
  const fresh = arrayItems(text, span.reused?.end ?? span.start + 1, span.end - 1);
  if (fresh.length !== parsed.length) return { reused };
  let chars =
    beforePrefix !== undefined
      ? beforePrefix.chars - (count - 1)
      : before.slice(0, count).reduce((sum, item) => sum + item.text.length, 0);
  const items = before.slice(0, count);
  for (const [index, where] of fresh.entries()) {
    const itemText = text.slice(where.start, where.end);
    chars += itemText.length;
    // Its long base64 strings would be this request's (taken out, or views into its text), kept alive with the value.
    if (
      chars > maxKeptHistoryChars ||
      (nonce !== "" && itemText.includes(nonce)) ||
      hasLongBase64String(itemText)
    )
      return { reused };
    // The slice for now: copied below, in the request text's width (same-width-copy.ts).
    items.push({ text: itemText, value: deepFreeze(parsed[index]), depth: where.depth });
  }
  const last = fresh.at(-1)?.end ?? span.reused?.end;
  // Compact (the items joined by single commas, as clients send them): kept as one text too,
  // the run of the items added copied once; else each item's text is a copy of its own.
  if (last !== undefined && last - (span.start + 1) === chars + items.length - 1)
    repeated.prefix = prefixOf(items, beforePrefix);
  else for (const item of items.slice(count)) item.text = sameWidthCopy(item.text);
  repeated.items = items;
  return { reused };
}

/**
 * The items as one text: the prefix they began with when all of it was reused (the same
 * one again when nothing was added), else one that extends it by a run of the items added,
 * or, with no prefix before them or one of too many runs, a new one of one run.
 */
function prefixOf(items: KnownItem[], before: KnownPrefix | undefined): KnownPrefix {
  if (before !== undefined && before.items === items.length) return before;
  const grows = before !== undefined && before.chunks.length < maxPrefixChunks;
  const added = items.slice(grows ? before.items : 0);
  // One join of the items' strings (the new ones slices of the request): a flat copy in the
  // request text's width, holding nothing of the request it came from.
  const chunk = joinedCopy(
    added.map((item) => item.text),
    ",",
  );
  let at = 0;
  for (const item of added) {
    const end = at + item.text.length;
    item.text = chunk.slice(at, end);
    at = end + 1;
  }
  const depth = added.reduce((deepest, item) => Math.max(deepest, item.depth), grows ? before.depth : 0);
  const prefix: KnownPrefix = grows
    ? {
        chunks: [...before.chunks, chunk],
        chars: before.chars + 1 + chunk.length,
        items: items.length,
        depth,
        key: {},
      }
    : { chunks: [chunk], chars: chunk.length, items: items.length, depth, key: {} };
  if (before !== undefined) prefix.extends = { key: before.key, end: before.chars };
  return prefix;
}

/** The text with each cut replaced (a reused member's value by `null`): the rest is parsed, the reused values put back after. */
function withCuts(text: string, cuts: { start: number; end: number; by: string }[]): string {
  cuts.sort((a, b) => a.start - b.start);
  const parts: string[] = [];
  let at = 0;
  for (const cut of cuts) {
    parts.push(text.slice(at, cut.start), cut.by);
    at = cut.end;
  }
  parts.push(text.slice(at));
  return parts.join("");
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
  repeated.memos.markRepeated(value);
  // A flat copy in the request text's width: a slice may keep the whole request text
  // (megabytes of images) alive with it.
  const copy = sameWidthCopy(text);
  repeated.known.set(name, { text: copy, value, depth: jsonNestingDepth(copy) });
}

/** A value as the body a client would send: its JSON text, parsed the way a route parses it. */
export function jsonBodyOf(value: unknown): JsonBody {
  return parseJsonBody(JSON.stringify(value));
}
