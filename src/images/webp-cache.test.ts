import { expect, test } from "bun:test";
import { createWebpCache, webpCacheKey } from "./webp-cache.ts";

test("keys differ by content and are stable", () => {
  expect(webpCacheKey("abcd")).toBe(webpCacheKey("abcd"));
  expect(webpCacheKey("abcd")).not.toBe(webpCacheKey("abce"));
});

test("evicts the least recently used entry when over max_entries", () => {
  const cache = createWebpCache({ max_entries: 2, max_bytes: 1_000_000 });
  cache.set("a", "A");
  cache.set("b", "B");
  expect(cache.get("a")).toBe("A"); // a is now the most recent
  cache.set("c", "C");
  expect(cache.get("b")).toBeUndefined();
  expect(cache.get("a")).toBe("A");
  expect(cache.get("c")).toBe("C");
  expect(cache.entries).toBe(2);
});

test("evicts by bytes (key + value length), oldest first", () => {
  const cache = createWebpCache({ max_entries: 100, max_bytes: 30 });
  cache.set("k1", "x".repeat(8)); // 10
  cache.set("k2", "x".repeat(8)); // 20
  cache.set("k3", "x".repeat(8)); // 30
  expect(cache.bytes).toBe(30);
  cache.set("k4", "x".repeat(3)); // 35 → k1 goes
  expect(cache.get("k1")).toBeUndefined();
  expect(cache.bytes).toBe(25);
  expect([cache.get("k2"), cache.get("k3"), cache.get("k4")].every((v) => v !== undefined)).toBe(true);
});

test("an entry larger than max_bytes is not stored and evicts nothing", () => {
  const cache = createWebpCache({ max_entries: 10, max_bytes: 10 });
  cache.set("a", "12345");
  cache.set("b", "x".repeat(50));
  expect(cache.get("b")).toBeUndefined();
  expect(cache.get("a")).toBe("12345");
});

test("replacing a key updates the byte count", () => {
  const cache = createWebpCache({ max_entries: 10, max_bytes: 100 });
  cache.set("a", "xxxx");
  cache.set("a", "xx");
  expect(cache.bytes).toBe(3);
  expect(cache.entries).toBe(1);
});
