/**
 * A copy kept to compare with the next body is as wide as the body it came from (two bytes a
 * character when the body is, one when it can be), and holds nothing of that body.
 */

import { describe, expect, test } from "bun:test";
import { oneByte } from "../../test/support/string-width.ts";
import { joinedCopy, sameWidthCopy } from "./same-width-copy.ts";

// JSON.stringify of a string of its own: a flat string, as a decoded body is.
const flat = (text: string) => JSON.parse(JSON.stringify(text)) as string;

describe("sameWidthCopy and joinedCopy", () => {
  test("a copy of a Latin-1 slice of a two-byte text is two-byte; of a one-byte text, one-byte", () => {
    const wide = flat(`{"system":"a dash — here","history":["plain words","more"]}`);
    const narrow = flat(`{"system":"a dash - here","history":["plain words","more"]}`);
    const cut = (text: string) => text.slice(text.indexOf("["), text.length - 1);
    expect(oneByte(wide)).toBe(false);
    expect(oneByte(narrow)).toBe(true);
    for (const copy of [
      sameWidthCopy(cut(wide)),
      joinedCopy([cut(wide)], ","),
      joinedCopy([cut(wide), "x"], ","),
    ])
      expect(oneByte(copy)).toBe(false);
    expect(oneByte(sameWidthCopy(cut(narrow)))).toBe(true);
    expect(sameWidthCopy(cut(wide))).toBe('["plain words","more"]');
    expect(joinedCopy(["a", cut(wide)], ",")).toBe('a,["plain words","more"]');
    // What a JSON round trip gives instead: narrowed.
    expect(oneByte(flat(cut(wide)))).toBe(true);
  });

  test("a copy of a small slice of each of many large texts keeps none of them alive", () => {
    const kept: string[] = [];
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 12; i++) {
      const body = flat(`—${"x".repeat(10_000_000)}${i}`); // 20 MB, two bytes a character
      kept.push(i % 2 === 0 ? sameWidthCopy(body.slice(1, 4001)) : joinedCopy([body.slice(1, 4001)], ","));
    }
    Bun.gc(true);
    // Twelve bodies kept would be 240 MB.
    expect(process.memoryUsage().rss - before).toBeLessThan(80 * 1024 * 1024);
    expect(kept.every((copy) => copy.length === 4000)).toBe(true);
  });
});
