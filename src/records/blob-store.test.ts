import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { heldDatasync, turn } from "../../test/support/held-datasync.ts";
import { sha256Hex } from "../lib/sha256.ts";
import { createBlobStore } from "./blob-store.ts";

const bytes = new TextEncoder().encode("a frame");
const dataDir = () => mkdtempSync(join(tmpdir(), "ura-blobs-"));

describe("the blob store", () => {
  test("stores bytes once under their SHA-256, shared by every store of the data directory", async () => {
    const dir = dataDir();
    const written: number[] = [];
    const first = createBlobStore(dir, { written: (n) => written.push(n) });
    const digest = first.put(bytes);
    expect(digest).toBe(new Bun.CryptoHasher("sha256").update(bytes).digest("hex"));
    expect(first.put(bytes)).toBe(digest);
    // A second store (another episode, a restarted process) finds it on disk.
    const second = createBlobStore(dir, { written: (n) => written.push(n) });
    expect(second.put(bytes)).toBe(digest);
    expect(second.put(() => bytes, digest, bytes.length)).toBe(digest);
    expect(written).toEqual([bytes.length]);
    expect(readdirSync(join(dir, "blobs", "sha256"))).toEqual([digest]);
    expect(second.read(digest)).toEqual(bytes);
    await first.durable();
  });

  test("a blob whose bytes no longer match its name is refused on read", () => {
    const store = createBlobStore(dataDir());
    const digest = store.put(bytes);
    writeFileSync(store.path(digest), "tampered");
    expect(() => store.read(digest)).toThrow("damaged");
    expect(() => store.read(sha256Hex(new Uint8Array([1])))).toThrow("missing");
    expect(() => store.path("../../etc/passwd")).toThrow("not a SHA-256");
  });

  test("a damaged blob of the right size set aside is written again by its next put", () => {
    const dir = dataDir();
    const store = createBlobStore(dir);
    const digest = store.put(bytes);
    const damaged = bytes.slice();
    damaged[0] = (damaged[0] ?? 0) ^ 1;
    writeFileSync(store.path(digest), damaged);
    // Its size is right: put alone keeps trusting it.
    expect(store.put(bytes)).toBe(digest);
    expect(() => store.read(digest)).toThrow("damaged");
    store.setAside(digest);
    expect(store.onDiskNow(digest)).toBe(false);
    expect(readFileSync(`${store.path(digest)}.damaged`)).toEqual(Buffer.from(damaged));
    expect(store.put(bytes)).toBe(digest);
    expect(store.read(digest)).toEqual(bytes);
    // A blob already gone is no error.
    store.setAside(sha256Hex(new Uint8Array([1])));
  });
});

describe("blob durability off the event loop", () => {
  test("put returns with the whole blob under its name; durable() waits for its fsync, then the directory's", async () => {
    const disk = heldDatasync();
    const store = createBlobStore(dataDir(), { fsyncInPool: disk.fdatasync });
    const digest = store.put(bytes);
    // On disk for kill -9 already: a line written now never refers to a missing blob.
    expect(readFileSync(store.path(digest))).toEqual(Buffer.from(bytes));
    let durable = false;
    void store.durable().then(() => {
      durable = true;
    });
    expect(disk.pending).toHaveLength(1);
    disk.complete();
    await turn();
    await turn();
    // The file's bytes are on stable storage, its name is not yet.
    expect(durable).toBe(false);
    expect(disk.pending).toHaveLength(1);
    disk.complete();
    await turn();
    expect(durable).toBe(true);
    expect(disk.pending).toHaveLength(0);
  });

  test("blobs put while the directory's fsync runs wait for the next one, which covers them all", async () => {
    const disk = heldDatasync();
    const store = createBlobStore(dataDir(), { fsyncInPool: disk.fdatasync });
    store.put(bytes);
    disk.complete();
    await turn();
    const directoryFd = disk.pending[0]?.fd ?? -1;
    const later = [1, 2].map((n) => store.put(new Uint8Array([n])));
    const settled: string[] = [];
    void store.durable().then(() => settled.push("later"));
    disk.complete(); // the directory's first round: began before the later renames
    disk.complete();
    disk.complete(); // both later files
    await turn();
    await turn();
    expect(settled).toEqual([]);
    expect(disk.pending.map((p) => p.fd)).toEqual([directoryFd]);
    disk.complete();
    await turn();
    expect(settled).toEqual(["later"]);
    expect(later.map((digest) => store.has(digest))).toEqual([true, true]);
  });

  test("a failed fsync rejects durable() naming the blob, and the blob is written again when next put", async () => {
    const disk = heldDatasync();
    const written: number[] = [];
    const store = createBlobStore(dataDir(), {
      fsyncInPool: disk.fdatasync,
      written: (n) => written.push(n),
    });
    const digest = store.put(bytes);
    const durable = store.durable();
    disk.complete(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }));
    await expect(durable).rejects.toThrow(`cannot write ${store.path(digest)}: EIO`);
    store.put(bytes);
    expect(written).toEqual([bytes.length, bytes.length]);
    disk.complete();
    await turn();
    disk.complete();
    await store.durable();
  });

  test("a name that survived a power cut without its bytes is written again when next put", () => {
    const dir = dataDir();
    const store = createBlobStore(dir, { fsync: false });
    const digest = store.put(bytes);
    // What a power cut after the rename and before the fsync can leave (ext4 delayed allocation).
    writeFileSync(store.path(digest), "");
    const restarted = createBlobStore(dir, { fsync: false });
    expect(restarted.put(() => bytes, digest, bytes.length)).toBe(digest);
    expect(restarted.read(digest)).toEqual(bytes);
  });

  test("with fsync off nothing is synced and durable() resolves at once", async () => {
    const disk = heldDatasync();
    const store = createBlobStore(dataDir(), { fsync: false, fsyncInPool: disk.fdatasync });
    store.put(bytes);
    await store.durable();
    store.durableNow();
    expect(disk.pending).toHaveLength(0);
  });
});
