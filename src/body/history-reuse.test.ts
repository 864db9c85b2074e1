/**
 * A history resent with new items reuses the items it repeats byte for byte (parse-json-body.ts):
 * whatever the client does to its history between turns (appends, edits an item, drops or
 * reorders some, compacts it, sends it with spaces), the value and the record line are those
 * the full path gives, and no item is ever reused from a turn where it read differently.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { oneByte } from "../../test/support/string-width.ts";
import { createBlobStore } from "../records/blob-store.ts";
import { formatRecordLine } from "../records/episode-records.ts";
import { createRecurringTexts } from "../records/text-references.ts";
import { createRepeatedMembers, jsonNestingDepth, parseJsonBody } from "./parse-json-body.ts";

/** An item is an object in every client's history; a bare number is a token that may grow by a digit. */
type Item = Record<string, unknown> | number;

/** Record lines as the records write a client's body: its known spans used, or not. */
function recordWriter() {
  const blobs = createBlobStore(mkdtempSync(join(tmpdir(), "ura-history-reuse-")));
  // Short "long" strings: most items then hold one, and the scan's reuse is exercised.
  const texts = createRecurringTexts(blobs, { redact: (text) => text, minTokenBytes: 24 });
  const options = { clock: () => 0, redact: (text: string) => text, blobs, texts };
  return (body: ReturnType<typeof parseJsonBody>) =>
    formatRecordLine(
      options,
      { stage: "client_request" },
      {
        json: { body: { split: body.received, known: (body.parsed && body.known) || [] } },
      },
    );
}

const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ minLength: 20, maxLength: 60 }),
  fc.constantFrom('quote " and \\ backslash', "café ☕ 𝄞", "[{,]}", "a,b"),
);
const item: fc.Arbitrary<Item> = fc.oneof(
  {
    arbitrary: fc.record({
      role: fc.constantFrom("user", "assistant"),
      content: fc.oneof(text, fc.array(fc.record({ type: fc.constant("text"), text }), { maxLength: 3 })),
      n: fc.oneof(fc.integer(), fc.constant(1), fc.constant(12)),
    }),
    weight: 4,
  },
  { arbitrary: fc.oneof(fc.constant(1), fc.constant(12), fc.nat()), weight: 1 },
);

/** The item with a digit appended to its number: its text then begins with the old text. */
function longerNumber(old: Item): Item {
  return typeof old === "number" ? Number(`${old}7`) : { ...old, n: Number(`${old.n}7`) };
}

/** One turn's change to the history; `edit` changes one item only slightly (a digit appended to a number). */
const change = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant("append" as const),
      items: fc.array(item, { minLength: 1, maxLength: 3 }),
    }),
    weight: 5,
  },
  { arbitrary: fc.record({ kind: fc.constant("same" as const) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("edit" as const), at: fc.nat(), to: item }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("longer-number" as const), at: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("drop" as const), at: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("compact" as const), keep: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("swap" as const), at: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("not-an-array" as const) }), weight: 1 },
);
type Change = typeof change extends fc.Arbitrary<infer C> ? C : never;

function apply(history: Item[] | string, c: Change): Item[] | string {
  const items = typeof history === "string" ? [] : [...history];
  const at = (n: number) => n % items.length;
  if (items.length === 0 && c.kind !== "append" && c.kind !== "not-an-array") return items;
  switch (c.kind) {
    case "append":
      return [...items, ...c.items];
    case "same":
      return items;
    case "edit":
      items[at(c.at)] = c.to;
      return items;
    case "longer-number":
      // Only the byte after the old text tells them apart.
      items[at(c.at)] = longerNumber(items[at(c.at)] as Item);
      return items;
    case "drop":
      items.splice(at(c.at), 1);
      return items;
    case "compact":
      return items.slice(items.length - (c.keep % (items.length + 1)));
    case "swap": {
      const i = at(c.at);
      const j = at(c.at + 1);
      [items[i], items[j]] = [items[j] as Item, items[i] as Item];
      return items;
    }
    case "not-an-array":
      return "a history given as text";
  }
}

function body(history: Item[] | string, turn: number, spaced: boolean): string {
  const request = { model: "m", messages: history, stream: turn % 2 === 0 };
  return spaced ? JSON.stringify(request, null, 1) : JSON.stringify(request);
}

describe("a history resent with new items", () => {
  test("gives the full path's value and record line on every turn, whatever changed between turns", () => {
    fc.assert(
      fc.property(
        fc.array(item, { maxLength: 4 }),
        fc.array(fc.record({ change, spaced: fc.boolean() }), { minLength: 1, maxLength: 12 }),
        (first, turns) => {
          const repeated = createRepeatedMembers([], "messages");
          const incremental = recordWriter();
          const full = recordWriter();
          let history: Item[] | string = first;
          for (const [turn, { change: c, spaced }] of [
            { change: { kind: "same" }, spaced: false },
            ...turns,
          ].entries()) {
            history = apply(history, c as Change);
            const sent = body(history, turn, spaced && turn > 0);
            const reusing = parseJsonBody(sent, repeated);
            const fresh = parseJsonBody(sent);
            expect(reusing.parsed).toBe(true);
            if (!reusing.parsed || !fresh.parsed) return;
            expect(reusing.value).toEqual(fresh.value);
            expect(JSON.stringify(reusing.value)).toBe(JSON.stringify(fresh.value));
            expect(reusing.received).toEqual(fresh.received);
            expect(incremental(reusing)).toBe(full(fresh));
            // Each kept item's depth, found on the scan that cut it, is its text's own.
            for (const kept of repeated.items ?? []) expect(kept.depth).toBe(jsonNestingDepth(kept.text));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  test("reuses exactly the items it repeats, frozen, and parses the rest", () => {
    const repeated = createRepeatedMembers([], "messages");
    const a = { role: "user", content: "a" };
    const b = { role: "assistant", content: "b" };
    const c = { role: "user", content: "c" };
    const first = parseJsonBody(JSON.stringify({ messages: [a, b] }), repeated);
    const second = parseJsonBody(JSON.stringify({ messages: [a, b, c] }), repeated);
    if (!first.parsed || !second.parsed) throw new Error("not parsed");
    const [one, two] = [first.value, second.value].map((v) => (v as { messages: object[] }).messages);
    expect(two?.[0]).toBe(one?.[0] as object);
    expect(two?.[1]).toBe(one?.[1] as object);
    expect(Object.isFrozen(two?.[0])).toBe(true);
    // Sent compact, the items it repeats are one known span: the last history's items, in one compare.
    expect(
      second.known?.map((span) => JSON.parse(`[${second.received.reduced.slice(span.start, span.end)}]`)),
    ).toEqual([[a, b]]);
    // The next turn's span is the longer prefix, naming the one it extends.
    const grownBody = parseJsonBody(JSON.stringify({ messages: [a, b, c, a] }), repeated);
    const [grown] = (grownBody.parsed && grownBody.known) || [];
    expect(grown?.extends).toEqual({
      key: second.known?.[0]?.key as object,
      end: JSON.stringify([a, b]).length - 2,
    });
    // An item edited: the prefix is not the history's; the items before the edit are compared
    // one by one, each its own span, extending nothing.
    const edited = parseJsonBody(JSON.stringify({ messages: [a, b, { ...c, content: "C" }, a] }), repeated);
    if (!edited.parsed) throw new Error("not parsed");
    expect(
      edited.known?.map((span) => [
        JSON.parse(edited.received.reduced.slice(span.start, span.end)),
        span.extends,
      ]),
    ).toEqual([
      [a, undefined],
      [b, undefined],
    ]);
    // An edited first item: nothing before it to reuse, the whole history parsed afresh.
    const third = parseJsonBody(JSON.stringify({ messages: [{ ...a, content: "A" }, b, c] }), repeated);
    if (!third.parsed) throw new Error("not parsed");
    expect((third.value as { messages: object[] }).messages[1]).not.toBe(two?.[1] as object);
    expect(third.known ?? []).toEqual([]);
  });

  test("a history grown turn after turn is one known span each turn, its runs joined again past 64", () => {
    const repeated = createRepeatedMembers([], "messages");
    const incremental = recordWriter();
    const full = recordWriter();
    const history: Item[] = [];
    for (let turn = 0; turn < 150; turn++) {
      history.push({
        role: turn % 2 ? "assistant" : "user",
        content: `turn ${turn} “said” ${"x".repeat(30)}`,
        n: turn,
      });
      const sent = body(history, turn, false);
      const reusing = parseJsonBody(sent, repeated);
      const fresh = parseJsonBody(sent);
      if (!reusing.parsed || !fresh.parsed) throw new Error("not parsed");
      expect(reusing.value).toEqual(fresh.value);
      expect(incremental(reusing)).toBe(full(fresh));
      if (turn > 0) expect(reusing.known).toHaveLength(1);
      if (turn > 1) expect(reusing.known?.[0]?.extends).toBeDefined();
      expect(repeated.prefix?.chunks.length).toBeLessThanOrEqual(64);
      expect(repeated.prefix?.chunks.join(",")).toBe(JSON.stringify(history).slice(1, -1));
    }
  });

  test("the kept runs and items are as wide as the request text (one dash outside the history makes it two bytes a character)", () => {
    for (const [model, spaced, wide] of [
      ["model — one", false, true],
      ["model - one", false, false],
      ["model — one", true, true],
    ] as const) {
      const repeated = createRepeatedMembers([], "messages");
      const history: Item[] = [];
      for (let turn = 0; turn < 4; turn++) {
        history.push({ role: "user", content: `plain turn ${turn}` }, { role: "assistant", content: "ok" });
        const request = { model, messages: history, stream: false };
        // As the server decodes a body: a flat string of its own, two bytes a character only if it must be.
        const sent = JSON.parse(
          JSON.stringify(spaced ? JSON.stringify(request, null, 1) : JSON.stringify(request)),
        );
        expect(oneByte(sent)).toBe(!wide);
        expect(parseJsonBody(sent, repeated).parsed).toBe(true);
      }
      const kept = [...(repeated.prefix?.chunks ?? []), ...(repeated.items ?? []).map((item) => item.text)];
      expect(kept.length).toBeGreaterThan(spaced ? 7 : 11);
      expect(repeated.prefix === undefined).toBe(spaced);
      for (const text of kept) expect(oneByte(text)).toBe(!wide);
    }
  });

  test("a history that reads the kept runs with a space for a comma between them is invalid JSON, as a fresh parse says", () => {
    const repeated = createRepeatedMembers([], "messages");
    const history: Item[] = [];
    for (let turn = 0; turn < 3; turn++) {
      history.push({ role: "user", content: `turn ${turn}`, n: turn });
      parseJsonBody(body(history, turn, false), repeated);
    }
    expect(repeated.prefix?.chunks.length).toBe(3);
    const sent = body(history, 3, false).replace(
      '},{"role":"user","content":"turn 2"',
      '} {"role":"user","content":"turn 2"',
    );
    const reusing = parseJsonBody(sent, repeated);
    expect(reusing).toEqual(parseJsonBody(sent));
    expect(reusing.parsed).toBe(false);
  });

  test("a history holding an image is not kept: its base64 stays the request's own", () => {
    const repeated = createRepeatedMembers([], "input");
    const image = {
      type: "input_image",
      image_url: `data:image/png;base64,${"iVBORw0KGgo".padEnd(4096, "A")}`,
    };
    parseJsonBody(JSON.stringify({ input: [{ role: "user", content: [image] }] }), repeated);
    expect(repeated.items).toBeUndefined();
  });
});
