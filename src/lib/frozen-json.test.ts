import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  deepFreeze,
  deriveOnce,
  jsonBytesReusingMembers,
  stringifyKnowingMembers,
  stringifyReusingMembers,
} from "./frozen-json.ts";
import { createFrozenMemos } from "./frozen-memos.ts";

const sometimesFrozen = fc
  .tuple(fc.oneof(fc.jsonValue(), fc.constant(undefined)), fc.boolean())
  .map(([value, frozen]) => (frozen ? deepFreeze(value) : value));

/**
 * Plain data objects whose members are sometimes frozen (as a repeated tool list is),
 * or arrays holding frozen items (a resent system prompt among the messages).
 */
const objectWithFrozenMembers = fc
  .dictionary(fc.string(), fc.oneof(sometimesFrozen, fc.array(sometimesFrozen, { maxLength: 4 })))
  .map((members) => ({ ...members }));

describe("JSON of frozen values, reused", () => {
  test("the same text and UTF-8 length as JSON.stringify, with frozen members or not", () => {
    fc.assert(
      fc.property(objectWithFrozenMembers, (object) => {
        const json = JSON.stringify(object);
        const memos = createFrozenMemos();
        expect(stringifyReusingMembers(object)).toBe(json);
        expect(stringifyReusingMembers(object, memos)).toBe(json);
        expect(stringifyReusingMembers(object, memos)).toBe(json);
        expect(jsonBytesReusingMembers(object)).toBe(Buffer.byteLength(json, "utf8"));
        expect(jsonBytesReusingMembers(object, memos)).toBe(Buffer.byteLength(json, "utf8"));
        // Each frozen member's JSON is where its span says, and only frozen members have one.
        const { text, known } = stringifyKnowingMembers(object);
        expect(text).toBe(json);
        const isFrozenObject = (v: unknown): v is object =>
          v !== null && typeof v === "object" && Object.isFrozen(v);
        const frozenParts = Object.values(object).flatMap((v) =>
          isFrozenObject(v) ? [v] : Array.isArray(v) ? v.filter(isFrozenObject) : [],
        );
        expect(known.map((span) => span.key)).toEqual(frozenParts);
        for (const span of known) expect(text.slice(span.start, span.end)).toBe(JSON.stringify(span.key));
      }),
    );
    const tools = deepFreeze([{ name: "é→😀", parameters: { type: "object" } }]);
    const request = { model: "m", tools, skipped: undefined, "1": "numeric keys first" };
    expect(stringifyReusingMembers(request)).toBe(JSON.stringify(request));
    expect(jsonBytesReusingMembers(request)).toBe(Buffer.byteLength(JSON.stringify(request), "utf8"));
  });

  test("a derivation is remembered per frozen argument, frozen itself, and redone for a mutable one", () => {
    let calls = 0;
    const doubled = (xs: readonly number[]) => {
      calls += 1;
      return xs.map((x) => x * 2);
    };
    const memos = createFrozenMemos();
    const double = (xs: readonly number[]) => deriveOnce(memos, doubled, xs);
    const frozen = deepFreeze([1, 2]);
    const first = double(frozen);
    expect(double(frozen)).toBe(first);
    expect(calls).toBe(1);
    expect(Object.isFrozen(first)).toBe(true);
    const mutable = [1, 2];
    expect(double(mutable)).toEqual([2, 4]);
    expect(double(mutable)).not.toBe(double(mutable));
    expect(Object.isFrozen(double(mutable))).toBe(false);
    // Another episode's memos, or none, derive afresh.
    expect(deriveOnce(createFrozenMemos(), doubled, frozen)).not.toBe(first);
    expect(deriveOnce(undefined, doubled, frozen)).toEqual([2, 4]);
    expect(calls).toBe(2 + 3 + 2);
  });
});
