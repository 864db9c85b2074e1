import { expect, test } from "bun:test";
import { createImageCache } from "./image-cache.ts";

const key = (c: string) => c.repeat(64);
const webp = (n: number) => new Uint8Array(n);

test("evicts the least recently used entries first, by bytes (WebP + 64-character key)", () => {
  const cache = createImageCache(3 * (64 + 10));
  cache.set(key("a"), webp(10));
  cache.set(key("b"), webp(10));
  cache.set(key("c"), webp(10));
  expect(cache.get(key("a"))).toBeDefined(); // a is now the most recent
  cache.set(key("d"), webp(10));
  expect(cache.get(key("b"))).toBeUndefined();
  expect([key("a"), key("c"), key("d")].every((k) => cache.get(k) !== undefined)).toBe(true);
  expect(cache.bytes).toBe(3 * 74);
  expect(cache.entries).toBe(3);
});

test("an entry larger than the bound is not stored and evicts nothing; replacing updates the count", () => {
  const cache = createImageCache(200);
  cache.set(key("a"), webp(5));
  cache.set(key("b"), webp(500));
  expect(cache.get(key("b"))).toBeUndefined();
  expect(cache.get(key("a"))).toBeDefined();
  cache.set(key("a"), webp(2));
  expect(cache.bytes).toBe(66);
  expect(createImageCache(0).entries).toBe(0);
});

test("release drops the entries only the released episode used; shared and unowned ones stay", () => {
  const cache = createImageCache(10_000);
  cache.set(key("a"), webp(10), "ep_1");
  cache.set(key("b"), webp(10), "ep_1");
  expect(cache.get(key("b"), "ep_2")).toBeDefined();
  cache.set(key("c"), webp(10));
  cache.release("ep_1");
  expect(cache.get(key("a"))).toBeUndefined();
  expect(cache.get(key("b"))).toBeDefined();
  expect(cache.get(key("c"))).toBeDefined();
  expect(cache.bytes).toBe(2 * 74);
  cache.release("ep_2");
  expect(cache.get(key("b"))).toBeUndefined();
  expect(cache.entries).toBe(1);
});

test("peek reads an entry without making it recent or adding an owner", () => {
  const cache = createImageCache(2 * (64 + 10));
  cache.set(key("a"), webp(10), "e1");
  cache.set(key("b"), webp(10));
  expect(cache.peek(key("a"))).toHaveLength(10);
  expect(cache.peek(key("z"))).toBeUndefined();
  cache.set(key("c"), webp(10)); // a is still the least recently used: it goes
  expect(cache.peek(key("a"))).toBeUndefined();
  cache.set(key("a"), webp(10), "e1");
  cache.peek(key("a"));
  cache.release("e1"); // only e1 owned it; a peek by anyone else does not keep it
  expect(cache.peek(key("a"))).toBeUndefined();
});

test("forget drops an entry once no other episode uses it; an entry with no owner goes at once", () => {
  const cache = createImageCache(10_000);
  cache.set(key("a"), webp(10), "ep_1");
  expect(cache.get(key("a"), "ep_2")).toBeDefined();
  cache.set(key("b"), webp(10), "ep_1");
  cache.set(key("c"), webp(10));
  cache.forget(key("a"), "ep_1");
  expect(cache.peek(key("a"))).toBeDefined(); // ep_2 may still send it
  cache.forget(key("a"), "ep_2");
  cache.forget(key("b"), "ep_1");
  cache.forget(key("c"));
  cache.forget(key("z"), "ep_1");
  expect(cache.entries).toBe(0);
  expect(cache.bytes).toBe(0);
});
