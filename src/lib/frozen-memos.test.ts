/** An episode's memos of its frozen values: the answers computing afresh gives, kept per episode. */
import { describe, expect, test } from "bun:test";
import { deepFreeze } from "./frozen-json.ts";
import { createFrozenMemos } from "./frozen-memos.ts";

describe("frozen memos", () => {
  test("a frozen value's JSON and length are computed once; an unfrozen one's every time", () => {
    const memos = createFrozenMemos();
    const frozen = deepFreeze({ a: [1, 2], é: "😀" });
    expect(memos.json(frozen)).toBe(JSON.stringify(frozen));
    expect(memos.json(frozen)).toBe(memos.json(frozen));
    expect(memos.jsonBytes(frozen)).toBe(Buffer.byteLength(JSON.stringify(frozen), "utf8"));
    const mutable = { a: [1] };
    expect(memos.json(mutable)).toBe('{"a":[1]}');
    expect(memos.jsonBytes(mutable)).toBe(9);
    mutable.a.push(2);
    expect(memos.json(mutable)).toBe('{"a":[1,2]}');
    expect(memos.jsonBytes(mutable)).toBe(11);
  });

  test("what one episode marked or kept is not seen by another", () => {
    const one = createFrozenMemos();
    const other = createFrozenMemos();
    const tools = deepFreeze([{ name: "t" }]);
    one.markRepeated(tools);
    expect(one.isRepeated(tools)).toBe(true);
    expect(other.isRepeated(tools)).toBe(false);
    expect(one.isRepeated(null)).toBe(false);
    const owner = {};
    one.table<object, number>(owner).set(tools, 1);
    expect(one.table<object, number>(owner).get(tools)).toBe(1);
    expect(one.table<object, number>({}).has(tools)).toBe(false);
    expect(other.table<object, number>(owner).has(tools)).toBe(false);
  });
});
