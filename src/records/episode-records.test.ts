import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { failedStatus, noImages } from "../../test/support/exchange-line-fields.ts";
import { heldDatasync, turn } from "../../test/support/held-datasync.ts";
import { RecordsWriteError } from "./append-file.ts";
import { createBlobStore } from "./blob-store.ts";
import { createEpisodeRecords } from "./episode-records.ts";
import { createGroupCommit } from "./group-commit.ts";

test("every kind of line reaches its file, with or without a byte counter", () => {
  for (const counted of [false, true]) {
    const dir = mkdtempSync(join(tmpdir(), "ura-records-"));
    try {
      const bytes: Record<string, number> = {};
      const records = createEpisodeRecords({
        dir,
        clock: () => 0,
        redact: (line) => line,
        blobs: createBlobStore(dir),
        ...(counted ? { written: (file: string, n: number) => (bytes[file] = (bytes[file] ?? 0) + n) } : {}),
      });
      records.clientRequest("ex_0001", { protocol: "responses", path: "/v1/responses" }, { json: "{}" });
      records.status("ex_0001", failedStatus);
      records.ledger({ type: "admission_closed", at: 0, reason: "closed" });
      records.auxiliary({ path: "/count" });
      for (const [file, lines] of [
        ["exchanges.jsonl", 2],
        ["ledger.jsonl", 1],
        ["auxiliary.jsonl", 1],
      ] as const) {
        const text = readFileSync(join(dir, file), "utf8");
        expect(text.split("\n").filter(Boolean)).toHaveLength(lines);
        if (counted) expect(bytes[file]).toBe(Buffer.byteLength(text));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

describe("episode.json written in the background", () => {
  const open = () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-describe-"));
    const records = createEpisodeRecords({
      dir,
      clock: () => 0,
      redact: (line) => line,
      blobs: createBlobStore(dir),
    });
    const description = () => JSON.parse(readFileSync(join(dir, "episode.json"), "utf8"));
    return { dir, records, description };
  };

  test("the newest of several descriptions lands, every caller is told, and no temporary file stays", async () => {
    const { dir, records, description } = open();
    await Promise.all([1, 2, 3].map((n) => records.describeInBackground({ n })));
    expect(description()).toEqual({ n: 3 });
    expect(readdirSync(dir)).toEqual(["episode.json"]);
  });

  test("a synchronous description given meanwhile is never overwritten by an older one", async () => {
    const { records, description } = open();
    const background = records.describeInBackground({ state: "running" });
    records.describe({ state: "failed" });
    await background;
    expect(description()).toEqual({ state: "failed" });
  });

  test("nothing is written once the records are frozen", async () => {
    const { dir, records } = open();
    records.describe({ state: "running" });
    const background = records.describeInBackground({ state: "later" });
    records.freeze({ reason: "test" });
    await background;
    await records.describeInBackground({ state: "after" });
    expect(JSON.parse(readFileSync(join(dir, "episode.json"), "utf8"))).toEqual({ state: "running" });
    expect(readdirSync(dir).sort()).toEqual(["episode.json", "frozen.json"]);
  });

  test("a write that fails rejects with RecordsWriteError and is the records' failure", async () => {
    const { dir, records } = open();
    rmSync(dir, { recursive: true, force: true });
    await expect(records.describeInBackground({ n: 1 })).rejects.toBeInstanceOf(RecordsWriteError);
    expect(records.failure).toContain("episode.json");
  });
});

describe("a line is never durable before the blobs it refers to", () => {
  /** Records whose blob fsyncs the test completes by hand (and, given one, their lines' fdatasyncs). */
  const heldRecords = (lineDatasync?: ReturnType<typeof heldDatasync>) => {
    const dir = mkdtempSync(join(tmpdir(), "ura-records-"));
    const blobDisk = heldDatasync();
    const records = createEpisodeRecords({
      dir,
      clock: () => 0,
      redact: (line) => line,
      blobs: createBlobStore(dir, { fsyncInPool: blobDisk.fdatasync }),
      groupCommit: createGroupCommit(lineDatasync ? { fdatasync: lineDatasync.fdatasync } : {}),
    });
    return { dir, blobDisk, records };
  };
  const png = `data:image/png;base64,${Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]).toString("base64")}`;

  test("the exchange file's fdatasync starts only once its blob's file and name are synced; the ledger's does not wait", async () => {
    const lineDisk = heldDatasync();
    const { dir, blobDisk, records } = heldRecords(lineDisk);
    records.clientRequest(
      "ex_0001",
      { protocol: "responses", path: "/v1/responses" },
      { json: JSON.stringify({ image: png }) },
    );
    records.upstreamRequest("ex_0001", { images: noImages, ignored: [] }, "{}");
    expect(readFileSync(join(dir, "exchanges.jsonl"), "utf8")).toContain('{"$blob":"sha256:');
    records.ledger({ type: "claimed", at: 0, callId: "c1", by: "call_id" });
    let synced = false;
    void records.sync().then(() => {
      synced = true;
    });
    await turn();
    // Only the ledger's line is being synced: the exchange line waits for its blob.
    expect(lineDisk.pending).toHaveLength(1);
    blobDisk.complete(); // the blob's bytes
    await turn();
    expect(lineDisk.pending).toHaveLength(1);
    blobDisk.complete(); // its name (the directory)
    await turn();
    await turn();
    expect(lineDisk.pending).toHaveLength(2);
    lineDisk.complete();
    lineDisk.complete();
    await turn();
    expect(synced).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });

  test("a blob that cannot be made durable fails the sync of every line that refers to it", async () => {
    const { dir, blobDisk, records } = heldRecords();
    records.upstreamRequest("ex_0001", { images: noImages, ignored: [] }, JSON.stringify({ image: png }));
    blobDisk.complete(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }));
    await expect(records.sync()).rejects.toBeInstanceOf(RecordsWriteError);
    await expect(records.sync()).rejects.toThrow("EIO");
    expect(records.failure).toContain("EIO");
    rmSync(dir, { recursive: true, force: true });
  });
});
