import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { createBlobStore } from "./blob-store.ts";
import { referencedDigests } from "./image-references.ts";
import { createRecurringTexts, inlineTexts, resolveTextReferences } from "./text-references.ts";

const noRedaction = (text: string) => text;
const long = (seed: string) => `${seed} `.repeat(600);

function store() {
  const blobs = createBlobStore(mkdtempSync(join(tmpdir(), "ura-texts-")));
  return { blobs, read: (digest: string) => blobs.read(digest) };
}

describe("long strings seen before", () => {
  test("the first copy stays inline; later copies, in any body, are references that inline back byte for byte", () => {
    const { blobs, read } = store();
    const texts = createRecurringTexts(blobs, { redact: noRedaction });
    // Escapes, quotes and non-ASCII text inside the string: the token is kept exactly as written.
    const prompt = JSON.stringify(`${long('You are "Claude"\n\tcafé ✓ \\u0041')}`);
    const first = `{"system":${prompt},"n":1}`;
    const second = `{"messages":[{"content":${prompt}}],"system":${prompt}}`;
    expect(texts.externalize(first)).toBe(first);
    const stored = texts.externalize(second);
    expect(stored).not.toContain("Claude");
    expect(stored).toMatch(
      /^\{"messages":\[\{"content":\{"\$text":"sha256:[0-9a-f]{64}","bytes":\d+\}\}\],"system":\{"\$text"/,
    );
    expect(JSON.parse(stored)).toBeTruthy();
    expect(inlineTexts(stored, read)).toBe(second);
    // One blob for both references, and shipping finds it.
    expect(new Set(referencedDigests(stored)).size).toBe(1);
    // Short strings and strings seen once are never stored.
    const short = `{"a":"${"x".repeat(100)}","b":"${"x".repeat(100)}"}`;
    expect(texts.externalize(short)).toBe(short);
    expect(texts.externalize(short)).toBe(short);
  });

  test("a long object key is never replaced (a reference stands only for a value)", () => {
    const { blobs, read } = store();
    const texts = createRecurringTexts(blobs, { redact: noRedaction });
    const key = JSON.stringify(long("key"));
    const json = `{${key} : 1, "v": ${key}}`;
    texts.externalize(json);
    const stored = texts.externalize(json);
    expect(stored.startsWith(`{${key} : 1, "v": {"$text":`)).toBe(true);
    expect(inlineTexts(stored, read)).toBe(json);
  });

  test("a stored string is redacted like the line it came from; text already holding a reference form is left alone", () => {
    const { blobs, read } = store();
    const texts = createRecurringTexts(blobs, {
      redact: (text) => text.replaceAll("sk-secret-value", "<redacted>"),
    });
    const json = `{"s":${JSON.stringify(long("key sk-secret-value"))}}`;
    texts.externalize(json);
    const restored = inlineTexts(texts.externalize(json), read);
    expect(restored).not.toContain("sk-secret-value");
    expect(restored).toContain("<redacted>");
    const forged = `{"x":{"$text":"sha256:${"0".repeat(64)}","bytes":3},"s":${JSON.stringify(long("y"))}}`;
    texts.externalize(forged);
    expect(texts.externalize(forged)).toBe(forged);
  });

  test("memory is bounded: the oldest strings are forgotten and written inline again", () => {
    const { blobs } = store();
    const texts = createRecurringTexts(blobs, { redact: noRedaction, rememberedBytes: 5000 });
    const bodies = ["a", "b", "c"].map((seed) => `{"s":${JSON.stringify(long(seed))}}`);
    for (const body of bodies) texts.externalize(body);
    // 3 × 1.2 KB fit in 5000: all remembered.
    expect(texts.externalize(bodies[0] as string)).toContain('"$text"');
    const many = Array.from({ length: 10 }, (_, i) => `{"s":${JSON.stringify(long(`seed${i}`))}}`);
    for (const body of many) texts.externalize(body);
    expect(texts.externalize(bodies[1] as string)).toBe(bodies[1] as string);
  });
});

test("any JSON text, seen twice: every string value of the length stored once, keys and shorter strings as they were", () => {
  const { blobs, read } = store();
  // Short tokens (8 characters, quotes included) so that most strings of a generated value count.
  const texts = createRecurringTexts(blobs, { redact: noRedaction, minTokenBytes: 8 });
  const stringsOf = (value: unknown): string[] =>
    typeof value === "string"
      ? [value]
      : value !== null && typeof value === "object"
        ? Object.values(value).flatMap(stringsOf)
        : [];
  fc.assert(
    fc.property(fc.jsonValue(), fc.constantFrom(0, 2), (value, space) => {
      const json = JSON.stringify(value, null, space);
      texts.externalize(json);
      const stored = texts.externalize(json);
      expect(inlineTexts(stored, read)).toBe(json);
      expect(resolveTextReferences(JSON.parse(stored), read)).toEqual(JSON.parse(json));
      const long = stringsOf(value).filter((s) => JSON.stringify(s).length >= 8);
      expect(referencedDigests(stored)).toHaveLength(long.length);
    }),
  );
});

describe("text references in a parsed value", () => {
  test("resolve to their strings; a missing blob is an error naming its digest", async () => {
    const { blobs, read } = store();
    const texts = createRecurringTexts(blobs, { redact: noRedaction });
    const value = { a: [long('é "q"')] };
    texts.externalize(JSON.stringify(value));
    const stored = JSON.parse(texts.externalize(JSON.stringify(value)));
    expect(stored.a[0].$text).toMatch(/^sha256:/);
    expect(resolveTextReferences(stored, read)).toEqual(value);
    const missing = { $text: `sha256:${"1".repeat(64)}`, bytes: 3 };
    expect(() => resolveTextReferences(missing, read)).toThrow("1".repeat(64));
  });
});
