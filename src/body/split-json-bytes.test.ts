import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { SidecarError } from "../lib/errors.ts";
import { type FrameText, type ImageBlob, imageBlobFact } from "../lib/known-frame.ts";
import { createKnownTexts, type KnownTexts } from "../lib/known-texts.ts";
import { sha256Hex } from "../lib/sha256.ts";
import { createOffThreadSha256, type OffThreadSha256 } from "../lib/sha256-off-thread.ts";
import { createBlobStore } from "../records/blob-store.ts";
import { formatRecordLine } from "../records/episode-records.ts";
import { createRecurringTexts } from "../records/text-references.ts";
import { createRepeatedMembers, parseJsonBody } from "./parse-json-body.ts";
import { createJsonSplitter, hashAheadBytes, readSplitJson } from "./split-json-bytes.ts";
import { type SplitText, unsplit, wholeText } from "./split-text.ts";

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

async function split(chunks: Uint8Array[]) {
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
        expect(wholeText(await split(chunksOf(body, cuts)))).toBe(expected);
      }),
      { numRuns: 400 },
    );
  });

  test("parses to what JSON.parse gives, its long base64 strings taken out as whole values", async () => {
    await fc.assert(
      fc.asyncProperty(json, fc.array(fc.nat(), { maxLength: 12 }), async (value, cuts) => {
        const text = JSON.stringify(value) ?? "null";
        const received = await split(chunksOf(Buffer.from(text), cuts));
        const parsed = parseJsonBody(received);
        expect(parsed.parsed && parsed.value).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
    const received = await split([Buffer.from(JSON.stringify({ a: [frame, { b: dataUrl }], c: "short" }))]);
    expect(received.strings).toEqual([frame, dataUrl]);
    expect(received.reduced.length).toBeLessThan(200);
  });

  test("invalid JSON fails with the message JSON.parse gives for the text as received", async () => {
    const text = `{"a":"${frame}","b":nope}`;
    const received = await split([Buffer.from(text)]);
    expect(received.strings.length).toBe(1);
    const parsed = parseJsonBody(received);
    expect(parsed.parsed).toBe(false);
    expect(!parsed.parsed && parsed.reason).toBe((parseJsonBody(text) as { reason: string }).reason);
  });

  test("its record line is the line of the text as received, byte for byte", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-split-line-"));
    const options = { clock: () => 0, redact: (line: string) => line, blobs: createBlobStore(dir) };
    await fc.assert(
      fc.asyncProperty(json, async (value) => {
        const text = JSON.stringify({ value }) ?? "null";
        const received = await split(chunksOf(Buffer.from(text), [7, 5000, 9000]));
        const line = (body: Parameters<typeof formatRecordLine>[2]) =>
          formatRecordLine(options, { stage: "client_request" }, body);
        expect(line({ json: { body: { split: received, known: [] } } })).toBe(line({ json: { body: text } }));
      }),
      { numRuns: 200 },
    );
  });

  test("with a repeated member known from an earlier request, its record line is still the text's", async () => {
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
      const body = parseJsonBody(await split(chunksOf(Buffer.from(text), [100, 3000, 7000])), repeated);
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
    expect(await small.finish()).toEqual(unsplit(text));
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

describe("long strings hashed in a worker while the body arrives", () => {
  /** Frames of a few lengths, a data URL, a long string that is not base64 (escaped), one the JSON closes early. */
  const longValues = [
    frame,
    Buffer.alloc(4000, 7).toString("base64"),
    png,
    dataUrl,
    `say "${frame}"`,
    `${frame}\\`,
    "x".repeat(5000),
  ];
  const body = fc.array(
    fc.oneof(fc.constantFrom(...longValues), fc.string({ maxLength: 30 }), fc.integer()),
    { maxLength: 8 },
  );
  /** The blob store a stand-in's text comes from: every blob is on disk but the ones said gone. */
  const gone = new Set<string>();
  const blobs = new Map<string, Uint8Array>();
  const frames = {
    onDisk: (digest: string) => blobs.has(digest) && !gone.has(digest),
    read: (digest: string) => blobs.get(digest) as Uint8Array,
    setAside: (digest: string) => {
      blobs.delete(digest);
    },
  };

  /** What a stage does with a taken-out string that is an image literal: its blob reference becomes a fact. */
  function learn(store: KnownTexts, value: FrameText): void {
    if (typeof value !== "string" || !/^(data:image\/png;base64,)?[A-Za-z0-9+/]+=*$/.test(value)) return;
    const base64From = value.startsWith("data:") ? value.indexOf(",") + 1 : 0;
    const base64 = value.slice(base64From);
    const digest = sha256Hex(Buffer.from(base64, "base64"));
    blobs.set(digest, Buffer.from(base64, "base64"));
    store
      .hold()
      .factsOf(sha256Hex(value))
      .values.set(imageBlobFact, {
        mediaType: "image/png",
        bytes: Buffer.from(base64, "base64").length,
        digest,
        dataUrl: base64From > 0,
        base64From,
      } satisfies ImageBlob);
  }

  /** A split with its nonce taken out and each stand-in as what it stands for. */
  function comparable(split: SplitText) {
    return {
      reduced: split.nonce === "" ? split.reduced : split.reduced.replaceAll(split.nonce, "<nonce>"),
      strings: split.strings.map((value) =>
        typeof value === "string" ? value : { standIn: value.facts.digest, length: value.length },
      ),
    };
  }

  test("gives exactly the split the main thread's hashing gives, over turns, for any bytes cut anywhere", async () => {
    const hashing = createOffThreadSha256();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(body, fc.array(fc.nat(), { maxLength: 12 })), { minLength: 1, maxLength: 3 }),
          fc.subarray(longValues),
          async (turns, lost) => {
            const here = createKnownTexts(8192, frames);
            const worker = createKnownTexts(8192, frames, hashing);
            for (const [values, cuts] of turns) {
              const bytes = Buffer.from(JSON.stringify({ input: values }));
              const splits: SplitText[] = [];
              for (const store of [here, worker]) {
                const splitter = createJsonSplitter({ knownTexts: store });
                // Each chunk a buffer of its own, as a request stream's are (the worker's is handed over).
                for (const chunk of chunksOf(bytes, cuts)) splitter.push(new Uint8Array(chunk));
                const split = await splitter.finish();
                splits.push(split);
                for (const value of split.strings) learn(store, value);
                split.hold?.release();
              }
              const [fromHere, fromWorker] = splits as [SplitText, SplitText];
              expect(comparable(fromWorker)).toEqual(comparable(fromHere));
              for (const split of splits) expect(wholeText(split)).toBe(bytes.toString());
              // A blob gone from disk: its frame is a string again on the next turn.
              for (const value of lost)
                gone.add(sha256Hex(Buffer.from(value.replace(/^data:[^,]*,/, ""), "base64")));
            }
            gone.clear();
            const { live, ...counts } = worker.counts();
            const { live: liveHere, ...countsHere } = here.counts();
            expect([live, liveHere]).toEqual([0, 0]);
            expect(counts).toEqual(countsHere);
          },
        ),
        { numRuns: 150 },
      );
    } finally {
      hashing.close();
    }
  });

  test("a body without long strings never waits on the worker", async () => {
    let chunksHashed = 0;
    const counting = createOffThreadSha256();
    const hashing = {
      ...counting,
      hash: (...args: Parameters<typeof counting.hash>) => {
        chunksHashed += 1;
        return counting.hash(...args);
      },
    };
    try {
      const store = createKnownTexts(8192, frames, hashing);
      const text = JSON.stringify({
        messages: Array.from({ length: 500 }, (_, i) => ({ text: `${i} ${"y".repeat(3000)}` })),
      });
      const splitter = createJsonSplitter({ knownTexts: store });
      for (const chunk of chunksOf(
        Buffer.from(text),
        Array.from({ length: 40 }, (_, i) => i * 997),
      ))
        splitter.push(chunk);
      expect(wholeText(await splitter.finish())).toBe(text);
      expect(chunksHashed).toBe(0);
      const long = createJsonSplitter({ knownTexts: store });
      long.push(Buffer.from(JSON.stringify([frame])));
      expect((await long.finish()).strings).toEqual([frame]);
      expect(chunksHashed).toBe(1);
    } finally {
      counting.close();
    }
  });

  test("a body is read no further than hashAheadBytes ahead of its worker", async () => {
    const real = createOffThreadSha256();
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const slow: OffThreadSha256 = {
      nextId: real.nextId,
      hash: (buffer, parts, ends) => gate.then(() => real.hash(buffer, parts, ends)),
      drop: real.drop,
      started: 0,
      close: real.close,
    };
    try {
      const frames = Array.from({ length: 20 }, (_, i) => Buffer.alloc(600_000, i).toString("base64"));
      const text = JSON.stringify({ input: frames });
      const splitter = createJsonSplitter({ knownTexts: createKnownTexts(8192, undefined, slow) });
      const bytes = Buffer.from(text);
      let pushed = 0;
      let behind: Promise<void> | undefined;
      while (behind === undefined && pushed < bytes.length) {
        behind = splitter.push(new Uint8Array(bytes.subarray(pushed, pushed + 131072)));
        pushed += 131072;
      }
      expect(behind).toBeInstanceOf(Promise);
      expect(pushed).toBeGreaterThan(hashAheadBytes);
      expect(pushed).toBeLessThan(hashAheadBytes + 2 * 131072);
      open();
      await behind;
      for (; pushed < bytes.length; pushed += 131072)
        await splitter.push(new Uint8Array(bytes.subarray(pushed, pushed + 131072)));
      const split = await splitter.finish();
      expect(split.strings).toEqual(frames);
      expect(wholeText(split)).toBe(text);
    } finally {
      real.close();
    }
  });

  test("a worker that fails fails the body with a retryable error, and lets go of its strings", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-split-failing-"));
    writeFileSync(join(dir, "dies.ts"), "self.onmessage = () => process.exit(1);\n");
    const hashing = createOffThreadSha256({ url: new URL(`file://${join(dir, "dies.ts")}`) });
    try {
      const store = createKnownTexts(8192, frames, hashing);
      const stream = new Blob([JSON.stringify({ input: [frame, png] })]).stream();
      const failed = await readSplitJson(stream, { knownTexts: store }).catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(SidecarError);
      expect((failed as SidecarError).retryable).toBe(true);
      expect(store.counts().live).toBe(0);
    } finally {
      hashing.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
