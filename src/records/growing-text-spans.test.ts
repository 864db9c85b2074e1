/**
 * An upstream body that repeats the last one's segments gets them as known spans
 * (growing-text-spans.ts): whatever changed between turns, its record line is the one
 * the whole text gives, and it restores byte for byte.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { oneByte } from "../../test/support/string-width.ts";
import { deepFreeze, type JsonText, stringifyKnowingMembers } from "../lib/frozen-json.ts";
import { createBlobStore } from "./blob-store.ts";
import { formatRecordLine } from "./episode-records.ts";
import { createGrowingText, knownSpansOfGrowingText } from "./growing-text-spans.ts";
import { inlineImages } from "./image-references.ts";
import { createRecurringTexts, inlineTexts } from "./text-references.ts";

function writer() {
  const blobs = createBlobStore(mkdtempSync(join(tmpdir(), "ura-growing-")));
  const texts = createRecurringTexts(blobs, { redact: (text) => text, minTokenBytes: 24 });
  const options = { clock: () => 0, redact: (text: string) => text, blobs, texts };
  const read = (digest: string) => blobs.read(digest);
  return {
    line: (json: string | JsonText) => formatRecordLine(options, { stage: "u" }, { json: { body: json } }),
    restore: (line: string) => inlineImages(inlineTexts(line, read), read),
  };
}

const text = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.string({ minLength: 24, maxLength: 80 }),
  fc.constantFrom('a "quoted" \\ one', "café ☕ 𝄞", "[{,]}"),
);
const message = fc.record({ role: fc.constantFrom("user", "assistant"), content: text });
const edit = fc.oneof(
  fc.record({
    kind: fc.constant("append" as const),
    items: fc.array(message, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({ kind: fc.constant("edit" as const), at: fc.nat(), to: message }),
  fc.record({ kind: fc.constant("drop" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("model" as const), to: text }),
);

describe("an upstream body that repeats the last one", () => {
  test("is recorded as the whole text is, whatever changed between turns, and restores byte for byte", () => {
    const tools = deepFreeze([
      { type: "function", function: { name: "observe", description: "x".repeat(90) } },
    ]);
    let reusedTurns = 0;
    fc.assert(
      fc.property(
        fc.array(edit, { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 1, max: 200 }),
        (edits, size) => {
          const last = createGrowingText(size);
          const withSpans = writer();
          const plain = writer();
          let messages: { role: string; content: string }[] = [];
          let model = "m";
          for (const e of edits) {
            if (e.kind === "append") messages = [...messages, ...e.items];
            else if (e.kind === "edit" && messages.length > 0) messages[e.at % messages.length] = e.to;
            else if (e.kind === "drop" && messages.length > 0) messages.splice(e.at % messages.length, 1);
            else if (e.kind === "model") model = e.to;
            const body = stringifyKnowingMembers({ model, messages, tools, stream: true });
            const known = knownSpansOfGrowingText(last, body);
            expect(known.text).toBe(body.text);
            if (known !== body) reusedTurns++;
            const line = withSpans.line(known);
            expect(line).toBe(plain.line(body.text));
            expect(withSpans.restore(line)).toBe(
              `{"v":3,"at":"1970-01-01T00:00:00.000Z","stage":"u","body":${body.text}}`,
            );
          }
        },
      ),
      { numRuns: 300 },
    );
    // The property held on turns that did reuse segments, not only on ones that reused none.
    expect(reusedTurns).toBeGreaterThan(100);
  });

  test("reuses the segments a grown body begins with; an early change reuses none", () => {
    const last = createGrowingText(16);
    const body = (messages: string[]) => ({ text: JSON.stringify({ messages, stream: true }), known: [] });
    knownSpansOfGrowingText(last, body(["first message text", "second message text"]));
    const grown = knownSpansOfGrowingText(last, body(["first message text", "second message text", "third"]));
    expect(grown.known.length).toBeGreaterThan(0);
    expect(grown.known[0]?.start).toBe(0);
    const changed = knownSpansOfGrowingText(last, { text: JSON.stringify({ other: 1 }), known: [] });
    expect(changed.known).toEqual([]);
  });

  test("keeps its segments as wide as the body (then compared at memory speed with the next one)", () => {
    for (const wide of [true, false]) {
      const last = createGrowingText(16);
      const messages = ["first message text", "second message text", "third message text"];
      const text = JSON.parse(JSON.stringify(JSON.stringify({ system: wide ? "—" : "-", messages })));
      expect(oneByte(text)).toBe(!wide);
      knownSpansOfGrowingText(last, { text, known: [] });
      expect(last.segments.length).toBeGreaterThan(2);
      for (const segment of last.segments) expect(oneByte(segment.text)).toBe(!wide);
    }
  });

  test("a body that is not kept leaves nothing for the next turn", () => {
    const last = createGrowingText(16);
    knownSpansOfGrowingText(
      last,
      { text: JSON.stringify({ messages: ["one two three four five"] }), known: [] },
      false,
    );
    expect(last.segments).toEqual([]);
  });
});
