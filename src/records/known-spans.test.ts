import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deepFreeze, type JsonText, stringifyKnowingMembers } from "../lib/frozen-json.ts";
import { createBlobStore } from "./blob-store.ts";
import { formatRecordLine } from "./episode-records.ts";
import { inlineImages } from "./image-references.ts";
import { createRecurringTexts, inlineTexts } from "./text-references.ts";

const long = (seed: string) => `${seed} "quoted" café\n`.repeat(80);
const png = `data:image/png;base64,${Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4, 5, 6, 7, 8]).toString("base64")}`;

function writer() {
  const blobs = createBlobStore(mkdtempSync(join(tmpdir(), "ura-spans-")));
  const texts = createRecurringTexts(blobs, { redact: (text) => text });
  const options = { clock: () => 0, redact: (text: string) => text, blobs, texts };
  const read = (digest: string) => blobs.read(digest);
  return {
    texts,
    line: (json: string | JsonText) => formatRecordLine(options, { stage: "x" }, { json: { body: json } }),
    restore: (line: string) => inlineImages(inlineTexts(line, read), read),
  };
}

/** Turns of a client that resends its tool list (frozen, as a repeated member is) and grows its messages. */
function turns(tools: object) {
  return [1, 2, 3, 4].map((n) =>
    stringifyKnowingMembers({
      model: "m",
      tools,
      messages: Array.from({ length: n }, (_, i) => ({
        role: "user",
        content: i === 0 ? long("first") : `turn ${i}`,
      })),
    }),
  );
}

describe("record lines of bodies with known spans", () => {
  test("are the lines the whole text gives, and restore byte for byte", () => {
    const tools = deepFreeze([
      { name: "a", description: long("tool a") },
      { name: "b", description: long("tool b"), icon: png, schema: { type: "object" } },
    ]);
    const withSpans = writer();
    const plain = writer();
    for (const body of turns(tools)) {
      expect(body.known).toHaveLength(1);
      const line = withSpans.line(body);
      expect(line).toBe(plain.line(body.text));
      expect(withSpans.restore(line)).toBe(
        `{"v":3,"at":"1970-01-01T00:00:00.000Z","stage":"x","body":${body.text}}`,
      );
    }
    // From the second turn on the tool list is references only: its strings were stored once.
    const last = withSpans.line(turns(tools)[3] as JsonText);
    expect(last).not.toContain("tool a");
    expect(last).toContain('{"$blob":"sha256:');
  });

  test("a settled span is not scanned again; an unsettled one is", () => {
    const tools = deepFreeze([{ name: "a", description: long("tool a") }]);
    const w = writer();
    const scanned: number[] = [];
    const externalize = w.texts.externalize.bind(w.texts);
    w.texts.externalize = (json) => {
      scanned.push(json.length);
      return externalize(json);
    };
    const [first, second, third] = turns(tools) as [JsonText, JsonText, JsonText];
    const toolsJson = JSON.stringify(tools);
    w.line(first); // the tool list's strings seen for the first time: not settled
    expect(scanned).toContain(toolsJson.length);
    scanned.length = 0;
    w.line(second); // all seen before: stored, settled
    expect(scanned).toContain(toolsJson.length);
    scanned.length = 0;
    const line = w.line(third);
    expect(scanned).not.toContain(toolsJson.length);
    expect(line).not.toContain("tool a");
  });

  test("a key whose text differs is scanned as text; a span holding a reference form keeps the line inline", () => {
    const tools = deepFreeze([{ name: "a", description: long("tool a") }]);
    const withSpans = writer();
    const plain = writer();
    const [first, second] = turns(tools) as [JsonText, JsonText];
    // The same key later given for other text: never the first text's result.
    const other = JSON.stringify({ tools: [{ name: "z", description: long("tool z") }] });
    const misKeyed = {
      text: other,
      known: [{ start: other.indexOf("["), end: other.length - 1, key: tools }],
    };
    for (const body of [first, second, misKeyed, misKeyed])
      expect(withSpans.line(body)).toBe(plain.line(body.text));
    expect(withSpans.restore(withSpans.line(misKeyed))).toContain("tool z");
    // A client's own object that looks like a reference: the line is written inline, marked so.
    const forged = deepFreeze([{ name: "f", schema: { $text: `sha256:${"0".repeat(64)}`, bytes: 3 } }]);
    for (const body of turns(forged)) {
      const line = withSpans.line(body);
      expect(line).toContain('"images_inline":true');
      expect(line).toContain(`"body":${body.text}`);
    }
  });

  test("a span that extends another is scanned past it only, and never takes a result for other text", () => {
    const item = (n: number, seed = "item") =>
      JSON.stringify({ role: "user", content: long(`${seed} ${n}`) });
    const history = (items: string[]) => {
      const text = `{"model":"m","messages":[${items.join(",")}]}`;
      return { text, start: text.indexOf("[") + 1, end: text.length - 2 };
    };
    const w = writer();
    const plain = writer();
    const scanned: number[] = [];
    const externalize = w.texts.externalize.bind(w.texts);
    w.texts.externalize = (json) => {
      scanned.push(json.length);
      return externalize(json);
    };
    const base = { key: {} };
    const one = history([item(1), item(2)]);
    const oneSpan = { start: one.start, end: one.end, key: base.key };
    // Twice: its strings stored, its result settled.
    for (let i = 0; i < 2; i++)
      expect(w.line({ text: one.text, known: [oneSpan] })).toBe(plain.line(one.text));
    const two = history([item(1), item(2), item(3)]);
    const extending = { key: {}, extends: { key: base.key, end: one.end - one.start } };
    scanned.length = 0;
    expect(w.line({ text: two.text, known: [{ start: two.start, end: two.end, ...extending }] })).toBe(
      plain.line(two.text),
    );
    // Only the comma and the item added were scanned, not the text before them.
    expect(scanned).toContain(item(3).length + 1);
    expect(scanned).not.toContain(two.end - two.start);
    // A span naming that key for a text that does not begin with its text (one character
    // changed, the same length) is scanned whole: its result is the whole text's.
    const changed = history([item(1), item(2, "itex"), item(3)]);
    const misNamed = { key: {}, extends: { key: base.key, end: one.end - one.start } };
    scanned.length = 0;
    expect(
      w.line({ text: changed.text, known: [{ start: changed.start, end: changed.end, ...misNamed }] }),
    ).toBe(plain.line(changed.text));
    expect(scanned).toContain(changed.end - changed.start);
  });

  test("a span its knower compared is taken as read only with the very strings the scan holds", () => {
    const w = writer();
    const plain = writer();
    const key = {};
    const body = (content: string) => {
      const item = JSON.stringify({ role: "user", content });
      const text = `{"messages":[${item}]}`;
      return {
        text,
        known: [{ start: 13, end: 13 + item.length, key, text: item, compared: true as const }],
      };
    };
    const first = body(long("first"));
    for (let i = 0; i < 3; i++) expect(w.line(first)).toBe(plain.line(first.text));
    // The same key given for other strings of the same length: compared, never the first text's result.
    const other = body(long("other"));
    expect(other.text.length).toBe(first.text.length);
    expect(w.line(other)).toBe(plain.line(other.text));
    expect(w.restore(w.line(other))).toContain("other");
  });
});
