import { expect, test } from "bun:test";
import { measureCacheEfficiency } from "./cache-efficiency.ts";
import type { PromptBlock } from "./prompt-blocks.ts";

const block = (digest: string, tokens = 10): PromptBlock => ({
  digest,
  tokens,
  marked: false,
  message: 0,
  part: -1,
});
const prompt = (digests: string) => [...digests].map((d) => block(d));

test("an append-only history gives 1", () => {
  expect(measureCacheEfficiency(prompt("abc"), prompt("abcde")).efficiency).toBe(1);
});

test("dropping the oldest block keeps everything else but no prefix: 0", () => {
  const result = measureCacheEfficiency(prompt("Sabcd"), prompt("Sbcde"));
  // S is a prefix (10 tokens); b, c, d are carried over after it (30).
  expect(result).toEqual({ efficiency: 10 / 40, prefixTokens: 10, carriedTokens: 40 });
});

test("what is dropped does not count against it; a changed block ends the prefix", () => {
  // c was dropped, d changed: carried = a, b; prefix = a, b.
  expect(measureCacheEfficiency(prompt("abcd"), prompt("abXe")).efficiency).toBe(1);
  expect(measureCacheEfficiency(prompt("abcd"), prompt("aXcd")).efficiency).toBe(10 / 30);
});

test("weights are tokens: an image outweighs text", () => {
  const previous = [block("s", 100), block("img1", 1200), block("img2", 1200)];
  const current = [block("s", 100), block("notice", 20), block("img2", 1200), block("img3", 1200)];
  expect(measureCacheEfficiency(previous, current).efficiency).toBeCloseTo(100 / 1300);
});

test("a block carried over counts once per copy both prompts have", () => {
  expect(measureCacheEfficiency(prompt("xaa"), prompt("ya")).carriedTokens).toBe(10);
  expect(measureCacheEfficiency([], prompt("ab")).efficiency).toBe(1);
});
