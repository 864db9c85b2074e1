/**
 * Work done once for values that cannot change. A client resends the same large
 * members every turn (Claude Code's 63 KB tool list); once such a member is parsed
 * it is deep-frozen, and each later stage (validation, translation, measuring,
 * serialising) keeps what it derived from it by object identity, in the episode's
 * memos (frozen-memos.ts; without them a value is serialised afresh). Freezing is what
 * makes identity a safe key: a frozen value's JSON is the same on every call, and
 * code that tried to change one would throw instead of leaving a stale result.
 */

import type { FrozenMemos } from "./frozen-memos.ts";

/** Freezes `value` and everything reachable from it; returns it. */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const member of Object.values(value)) deepFreeze(member);
  return value;
}

function isFrozenObject(value: unknown): value is object {
  return value !== null && typeof value === "object" && Object.isFrozen(value);
}

/** Whether a member is frozen, or an array holding a frozen item. */
function hasFrozenMember(object: Record<string, unknown>): boolean {
  for (const key in object) {
    const value = object[key];
    if (isFrozenObject(value) || (Array.isArray(value) && value.some(isFrozenObject))) return true;
  }
  return false;
}

/** JSON.stringify(value), the episode's memo of it reused for a frozen object (computed afresh without memos). */
function stringifyOnce(value: unknown, memos: FrozenMemos | undefined): string {
  return memos === undefined ? JSON.stringify(value) : memos.json(value);
}

/**
 * Where a JSON text repeats a value's text known from before, from `start` to `end`
 * (a whole value: it begins and ends outside any string). `key` always stands for
 * the same text, so what a later stage derives from that text (the records' scan
 * of it) can be kept by `key` and reused while the text is the same.
 */
export type KnownSpan = {
  start: number;
  end: number;
  key: object;
  /**
   * The span's text as whoever knows it already holds it (a flat string), so the records
   * keep that one string rather than a copy of their own; compared before it is used
   * (by the records, or by the knower: `compared`).
   */
  text?: string;
  /** The same held in parts: the span's text is these strings joined by commas. */
  parts?: readonly string[];
  /**
   * The knower has compared `text` (or `parts`) with this very JSON text at this place, or
   * put that string there itself: the records take it as read rather than compare again.
   */
  compared?: true;
  /**
   * The span's text begins with the text of the span known by `key` (`end` characters,
   * outside any string), then a comma: what the records made of that one is reused for
   * its part, once both texts are compared.
   */
  extends?: { key: object; end: number };
};

/** A JSON text and its known spans (in order, not overlapping). */
export type JsonText = { text: string; known: readonly KnownSpan[] };

/**
 * The same text as JSON.stringify(object) for a plain data object, with each
 * frozen member's JSON reused: an object's JSON is `{`, its members
 * `"key":value` in key order joined by commas (members whose value has no JSON
 * skipped), `}`. Where each frozen member's JSON lies is returned with it.
 */
export function stringifyKnowingMembers(object: Record<string, unknown>, memos?: FrozenMemos): JsonText {
  // Without a frozen member there is nothing to reuse, and one JSON.stringify copies nothing twice.
  if (!hasFrozenMember(object)) return { text: JSON.stringify(object), known: [] };
  // One join of all the parts: the engine builds a flat string. Concatenating the joined
  // members with the braces made a rope that every later reader flattened again
  // (in process, 70 KB of Claude Code's body: ~100 us for UTF-8 length and encoding vs ~430).
  const parts: string[] = ["{"];
  const known: KnownSpan[] = [];
  let length = 1;
  const add = (json: string, frozen?: object) => {
    if (frozen)
      known.push({ start: length, end: length + json.length, key: frozen, text: json, compared: true });
    parts.push(json);
    length += json.length;
  };
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (Array.isArray(value) && !Object.isFrozen(value) && value.some(isFrozenObject)) {
      // An array holding frozen items (a resent system prompt among the messages): `[`,
      // each item's JSON (`null` for one that has none, as JSON.stringify writes it), `]`.
      add(`${length === 1 ? "" : ","}${JSON.stringify(key)}:[`);
      value.forEach((item, i) => {
        if (i > 0) add(",");
        if (isFrozenObject(item)) add(stringifyOnce(item, memos), item);
        else add(JSON.stringify(item) ?? "null");
      });
      add("]");
      continue;
    }
    const json = isFrozenObject(value) ? stringifyOnce(value, memos) : JSON.stringify(value);
    if (json === undefined) continue;
    add(`${length === 1 ? "" : ","}${JSON.stringify(key)}:`);
    add(json, isFrozenObject(value) ? value : undefined);
  }
  parts.push("}");
  return { text: parts.join(""), known };
}

/** stringifyKnowingMembers' text alone: the same text as JSON.stringify(object). */
export function stringifyReusingMembers(object: Record<string, unknown>, memos?: FrozenMemos): string {
  return stringifyKnowingMembers(object, memos).text;
}

/** UTF-8 length of JSON.stringify(value), the episode's memo of it reused for a frozen object. */
function jsonBytesOnce(value: object, memos: FrozenMemos | undefined): number {
  return memos === undefined ? Buffer.byteLength(JSON.stringify(value), "utf8") : memos.jsonBytes(value);
}

/**
 * UTF-8 length of stringifyReusingMembers(object) (so of JSON.stringify(object)),
 * without building that text: a frozen member's length is known from an earlier call.
 */
export function jsonBytesReusingMembers(object: Record<string, unknown>, memos?: FrozenMemos): number {
  if (!hasFrozenMember(object)) return Buffer.byteLength(JSON.stringify(object), "utf8");
  let bytes = 2;
  let members = 0;
  for (const key of Object.keys(object)) {
    const value = object[key];
    let valueBytes: number;
    if (isFrozenObject(value)) valueBytes = jsonBytesOnce(value, memos);
    else {
      const json = JSON.stringify(value);
      if (json === undefined) continue;
      valueBytes = Buffer.byteLength(json, "utf8");
    }
    bytes += Buffer.byteLength(JSON.stringify(key), "utf8") + 1 + valueBytes;
    members += 1;
  }
  return bytes + Math.max(0, members - 1);
}

/**
 * `derive(argument)`, remembered per frozen argument in the episode's memos (one table
 * per `derive`, so it must be a function declared once, not a fresh closure); the result
 * is deep-frozen, so it can key the next stage's memo. Any other argument, or a call
 * without memos, is derived afresh.
 */
export function deriveOnce<A extends object, R extends object>(
  memos: FrozenMemos | undefined,
  derive: (argument: A) => R,
  argument: A,
): R {
  if (memos === undefined || !Object.isFrozen(argument)) return derive(argument);
  const derived = memos.table<A, R>(derive);
  let result = derived.get(argument);
  if (result === undefined) {
    result = deepFreeze(derive(argument));
    derived.set(argument, result);
  }
  return result;
}
