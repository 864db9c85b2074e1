import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writePng } from "../images/write-png.ts";
import { sha256Hex } from "../lib/sha256.ts";
import { createBlobStore } from "./blob-store.ts";
import { externalizeImages, inlineImages, resolveBlobReferences } from "./image-references.ts";

const store = () => createBlobStore(mkdtempSync(join(tmpdir(), "ura-refs-")));
const png = writePng({ width: 3, height: 2, colourType: 2, bitDepth: 8, rows: new Uint8Array(18).fill(200) });
const pngBase64 = png.toBase64();
const digest = sha256Hex(png);

describe("image literals become blob references and back, byte for byte", () => {
  test("a data URL and plain base64, in any JSON position", () => {
    const blobs = store();
    const text = `{"a":"data:image/png;base64,${pngBase64}","b":[ "${pngBase64}" ],"c":"x"}`;
    const out = externalizeImages(text, blobs);
    expect(out).toBe(
      `{"a":{"$blob":"sha256:${digest}","media_type":"image/png","bytes":${png.length}},"b":[ {"$blob":"sha256:${digest}","media_type":"image/png","bytes":${png.length},"encoding":"base64"} ],"c":"x"}`,
    );
    expect(readdirSync(blobs.dir)).toEqual([digest]);
    expect(inlineImages(out, blobs.read)).toBe(text);
    expect(resolveBlobReferences(JSON.parse(out), blobs.read)).toEqual(JSON.parse(text));
  });

  test("left inline: escaped JSON inside a string, non-canonical base64, non-image base64, a RIFF that is not WebP", () => {
    const blobs = store();
    const nested = JSON.stringify({ text: JSON.stringify({ image: `data:image/png;base64,${pngBase64}` }) });
    expect(externalizeImages(nested, blobs)).toBe(nested);
    const unpadded = pngBase64.replace(/=+$/, "");
    for (const text of [
      `{"a":"${unpadded}"}`,
      // Non-zero bits after the last byte: decodes, but does not encode back to the same text.
      `{"a":"data:image/png;base64,AQIDBB=="}`,
      `{"a":"${new Uint8Array(64).fill(7).toBase64()}"}`,
      `{"a":"${new TextEncoder().encode("RIFF\u0004\u0000\u0000\u0000WAVEfmt data data data").toBase64()}"}`,
    ]) {
      expect(externalizeImages(text, blobs)).toBe(text);
    }
    expect(existsSync(blobs.dir)).toBe(false);
  });

  test("left inline: base64 after an escaped quote at the end of a longer string, so the line stays JSON", () => {
    const blobs = store();
    for (const value of [`say "${pngBase64}`, `say \\"data:image/png;base64,${pngBase64}`]) {
      const text = JSON.stringify({ x: value, y: pngBase64 });
      const out = externalizeImages(text, blobs);
      expect(JSON.parse(out).x).toBe(value);
      expect(out).toContain('"y":{"$blob"');
      expect(inlineImages(out, blobs.read)).toBe(text);
    }
  });

  test("an image already in the store is hashed from its base64, never decoded again", () => {
    const blobs = store();
    const decoded: string[] = [];
    const counting = {
      put: (bytes: Uint8Array | (() => Uint8Array), digest?: string) =>
        blobs.put(() => {
          decoded.push(digest ?? "");
          return typeof bytes === "function" ? bytes() : bytes;
        }, digest),
    };
    const text = `["data:image/png;base64,${pngBase64}","data:image/png;base64,${pngBase64}"]`;
    const once = externalizeImages(text, counting);
    expect(externalizeImages(text, counting)).toBe(once);
    expect(decoded).toEqual([digest]);
    expect(blobs.read(digest)).toEqual(new Uint8Array(png));
  });

  test("a text that already contains the reference form is not touched", () => {
    const blobs = store();
    const text = `{"x":{"$blob":"sha256:${"0".repeat(64)}","media_type":"image/png","bytes":1},"a":"${pngBase64}"}`;
    expect(externalizeImages(text, blobs)).toBe(text);
  });

  test("a missing or damaged blob is an error naming its digest", () => {
    const blobs = store();
    const out = externalizeImages(`["${pngBase64}"]`, blobs);
    expect(() => inlineImages(out.replace(digest, "f".repeat(64)), blobs.read)).toThrow(
      `sha256:${"f".repeat(64)}`,
    );
  });
});
