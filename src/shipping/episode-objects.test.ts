import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatRecordLine } from "../records/episode-records.ts";
import { digestFile, fingerprintOf } from "./episode-objects.ts";

const dir = mkdtempSync(join(tmpdir(), "ura-objects-"));
const hex = (seed: string) => createHash("sha256").update(seed).digest("hex");

describe("digestFile", () => {
  test("finds a blob reference split across two reads, hashing exactly the planned prefix", async () => {
    const refs = [hex("a"), hex("b")];
    // Bun reads files in 256 KiB chunks first: the second reference straddles that boundary.
    const firstRead = 256 * 1024;
    const head = `${JSON.stringify({ image: { $blob: `sha256:${refs[0]}` } })}\n`;
    const padding = firstRead - 30 - head.length - '{"pad":""}\n'.length;
    const text = `${head}${JSON.stringify({ pad: "x".repeat(padding) })}\n${JSON.stringify({ image: { $blob: `sha256:${refs[1]}`, media_type: "image/png", bytes: 3 } })}\n`;
    const split = text.indexOf(refs[1] as string);
    expect(split).toBeLessThan(firstRead);
    expect(split + 64).toBeGreaterThan(firstRead);
    const path = join(dir, "exchanges.jsonl");
    writeFileSync(path, `${text}{"torn": "a line being appended`);
    const digest = await digestFile(path, Buffer.byteLength(text));
    expect([...digest.blobs].sort()).toEqual([...refs].sort());
    expect(digest.sha256).toBe(createHash("sha256").update(text).digest("hex"));
  });

  test("finds the references inside a text member (a body recorded as text, its images referenced in the string)", async () => {
    const put: Uint8Array[] = [];
    const blobs = {
      put(source: Uint8Array | (() => Uint8Array)) {
        const bytes = typeof source === "function" ? source() : source;
        put.push(bytes);
        return createHash("sha256").update(bytes).digest("hex");
      },
    };
    const png =
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
    // A client body that is not single-line JSON is kept as the string `body_text`.
    const bodyText = `{\n  "input": [{"type": "input_image", "image_url": "data:image/png;base64,${png}"}]\n}`;
    const line = formatRecordLine(
      { clock: () => 0, redact: (text) => text, blobs },
      { exchange: "ex_1", stage: "client_request" },
      { text: { body_text: bodyText } },
    );
    expect(put).toHaveLength(1);
    const path = join(dir, "text-member.jsonl");
    writeFileSync(path, `${line}\n`);
    const digest = await digestFile(path, Buffer.byteLength(line) + 1);
    expect([...digest.blobs]).toEqual([
      createHash("sha256")
        .update(put[0] as Uint8Array)
        .digest("hex"),
    ]);
  });

  test("a data URL or a digest outside a $blob reference is not a blob", async () => {
    const path = join(dir, "other.jsonl");
    writeFileSync(
      path,
      `${JSON.stringify({ note: `sha256:${hex("d")}`, url: "data:image/png;base64,AAAA" })}\n`,
    );
    expect((await digestFile(path, 1_000_000)).blobs.size).toBe(0);
  });
});

test("the fingerprint changes when a file grows, is added or is rewritten", () => {
  const base = [{ name: "exchanges.jsonl", size: 10, mtimeMs: 1000.4 }];
  expect(fingerprintOf(base)).toBe("exchanges.jsonl:10:1000");
  expect(fingerprintOf([{ ...base[0], size: 11 } as (typeof base)[0]])).not.toBe(fingerprintOf(base));
  expect(fingerprintOf([...base, { name: "frozen.json", size: 2, mtimeMs: 1 }])).not.toBe(
    fingerprintOf(base),
  );
});
