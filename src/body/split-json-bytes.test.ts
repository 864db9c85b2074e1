import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { createBlobStore } from "../records/blob-store.ts";
import { formatRecordLine } from "../records/episode-records.ts";
import { createRecurringTexts } from "../records/text-references.ts";
import { createRepeatedMembers, parseJsonBody } from "./parse-json-body.ts";
import { createJsonSplitter, readSplitJson } from "./split-json-bytes.ts";
import { unsplit, wholeText } from "./split-text.ts";

const frame = Buffer.alloc(6000, 0x89).toString("base64");
const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10]),
  Buffer.alloc(5000, 3),
]).toBase64();
const dataUrl = `data:image/png;base64,${png}`;

/** The bytes cut into chunks at the given offsets (as a socket may deliver them). */
function chunksOf(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const cut of [...at, bytes.length]) {
    chunks.push(bytes.slice(from, cut));
    from = cut;
  }
  return chunks;
}

function split(chunks: Uint8Array[]) {
  const splitter = createJsonSplitter();
  for (const chunk of chunks) splitter.push(chunk);
  return splitter.finish();
}

const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.oneof(
      fc.constant(frame),
      fc.constant(dataUrl),
      fc.constant(png),
      fc.constant(`${frame}\\`),
      fc.constant(`say "${frame}"`),
      fc.string({ unit: "grapheme" }),
      fc.string({ unit: "binary" }),
      fc.integer(),
      fc.boolean(),
    ),
    fc.array(tie("value")),
    fc.dictionary(fc.oneof(fc.string(), fc.constant(frame)), tie("value")),
  ),
})).value;

describe("a JSON body split while its bytes arrive", () => {
  test("joins back to exactly the text Request.text() gives, for any bytes cut anywhere", async () => {
    const text = fc.oneof(
      json.map((value) => JSON.stringify(value) ?? "null"),
      json.map((value) => `\ufeff${JSON.stringify(value, null, 1)}`),
    );
    const bytes = fc.oneof(
      text.map((t) => Buffer.from(t)),
      fc.tuple(text, fc.uint8Array({ maxLength: 8 }), fc.nat()).map(([t, noise, at]) => {
        const b = Buffer.from(t); // invalid UTF-8 and stray quotes or backslashes anywhere
        const i = at % (b.length + 1);
        return Buffer.concat([b.subarray(0, i), noise, b.subarray(i)]);
      }),
    );
    await fc.assert(
      fc.asyncProperty(bytes, fc.array(fc.nat(), { maxLength: 12 }), async (body, cuts) => {
        const expected = await new Request("http://x/", { method: "POST", body }).text();
        expect(wholeText(split(chunksOf(body, cuts)))).toBe(expected);
      }),
      { numRuns: 400 },
    );
  });

  test("parses to what JSON.parse gives, its long base64 strings taken out as whole values", () => {
    fc.assert(
      fc.property(json, fc.array(fc.nat(), { maxLength: 12 }), (value, cuts) => {
        const text = JSON.stringify(value) ?? "null";
        const received = split(chunksOf(Buffer.from(text), cuts));
        const parsed = parseJsonBody(received);
        expect(parsed.parsed && parsed.value).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
    const received = split([Buffer.from(JSON.stringify({ a: [frame, { b: dataUrl }], c: "short" }))]);
    expect(received.strings).toEqual([frame, dataUrl]);
    expect(received.reduced.length).toBeLessThan(200);
  });

  test("invalid JSON fails with the message JSON.parse gives for the text as received", () => {
    const text = `{"a":"${frame}","b":nope}`;
    const received = split([Buffer.from(text)]);
    expect(received.strings.length).toBe(1);
    const parsed = parseJsonBody(received);
    expect(parsed.parsed).toBe(false);
    expect(!parsed.parsed && parsed.reason).toBe((parseJsonBody(text) as { reason: string }).reason);
  });

  test("its record line is the line of the text as received, byte for byte", () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-split-line-"));
    const options = { clock: () => 0, redact: (line: string) => line, blobs: createBlobStore(dir) };
    fc.assert(
      fc.property(json, (value) => {
        const text = JSON.stringify({ value }) ?? "null";
        const received = split(chunksOf(Buffer.from(text), [7, 5000, 9000]));
        const line = (body: Parameters<typeof formatRecordLine>[2]) =>
          formatRecordLine(options, { stage: "client_request" }, body);
        expect(line({ json: { body: { split: received, known: [] } } })).toBe(line({ json: { body: text } }));
      }),
      { numRuns: 200 },
    );
  });

  test("with a repeated member known from an earlier request, its record line is still the text's", () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-split-known-"));
    const texts = createRecurringTexts(createBlobStore(dir), { redact: (text) => text });
    const options = { clock: () => 0, redact: (line: string) => line, blobs: createBlobStore(dir), texts };
    const plainOptions = {
      ...options,
      texts: createRecurringTexts(createBlobStore(dir), { redact: (text) => text }),
    };
    const repeated = createRepeatedMembers(["tools"]);
    const tools = Array.from({ length: 20 }, (_, i) => ({ name: `tool_${i}`, description: "x".repeat(80) }));
    for (let turn = 1; turn <= 3; turn++) {
      const messages = Array.from({ length: turn }, (_, i) => ({
        role: "user",
        content: [png, `${i}`, dataUrl],
      }));
      const text = JSON.stringify({ model: "m", tools, messages });
      const body = parseJsonBody(split(chunksOf(Buffer.from(text), [100, 3000, 7000])), repeated);
      if (!body.parsed) throw new Error("not parsed");
      if (turn > 1) expect(body.known?.length).toBe(1);
      const line = formatRecordLine(
        options,
        { stage: "client_request" },
        {
          json: { body: { split: body.received, known: body.known ?? [] } },
        },
      );
      expect(line).toBe(
        formatRecordLine(plainOptions, { stage: "client_request" }, { json: { body: text } }),
      );
      expect(line).toContain('"$blob"');
    }
  });

  test("a body under keepWholeUnder comes back whole; reading stops when its signal aborts", async () => {
    const text = JSON.stringify([frame]);
    const small = createJsonSplitter({ keepWholeUnder: text.length + 1 });
    small.push(Buffer.from(text));
    expect(small.finish()).toEqual(unsplit(text));
    const stop = new AbortController();
    const endless = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        await Bun.sleep(5);
        controller.enqueue(Buffer.from(frame));
      },
    });
    const reading = readSplitJson(endless, { signal: stop.signal });
    await Bun.sleep(30);
    stop.abort(new Error("deadline"));
    await expect(reading).rejects.toThrow("deadline");
  });
});
