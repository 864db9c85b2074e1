import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256Hex } from "../lib/sha256.ts";
import { createBlobStore } from "./blob-store.ts";

const bytes = new TextEncoder().encode("a frame");

describe("the blob store", () => {
  test("stores bytes once under their SHA-256, shared by every store of the data directory", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ura-blobs-"));
    const writes: string[] = [];
    const counting = (path: string, data: Uint8Array) => {
      writes.push(path);
      writeFileSync(path, data);
    };
    const first = createBlobStore(dataDir, counting);
    const digest = first.put(bytes);
    expect(digest).toBe(new Bun.CryptoHasher("sha256").update(bytes).digest("hex"));
    expect(first.put(bytes)).toBe(digest);
    // A second store (another episode, a restarted process) finds it on disk.
    const second = createBlobStore(dataDir, counting);
    expect(second.put(bytes)).toBe(digest);
    expect(writes).toEqual([join(dataDir, "blobs", "sha256", digest)]);
    expect(readdirSync(join(dataDir, "blobs", "sha256"))).toEqual([digest]);
    expect(second.read(digest)).toEqual(bytes);
  });

  test("a blob whose bytes no longer match its name is refused on read", () => {
    const store = createBlobStore(mkdtempSync(join(tmpdir(), "ura-blobs-")));
    const digest = store.put(bytes);
    writeFileSync(store.path(digest), "tampered");
    expect(() => store.read(digest)).toThrow("damaged");
    expect(() => store.read(sha256Hex(new Uint8Array([1])))).toThrow("missing");
    expect(() => store.path("../../etc/passwd")).toThrow("not a SHA-256");
  });
});
