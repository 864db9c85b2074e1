import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openUploadJournal } from "./upload-journal.ts";

const open = (dataDir: string, target = "http://s3.test/bucket") =>
  openUploadJournal({ dataDir, target, clock: () => Date.UTC(2026, 0, 1) });

describe("upload journal", () => {
  test("what was confirmed survives a reopen; facts of another bucket do not count", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ura-journal-"));
    const first = open(dataDir);
    first.confirmObject("p/blobs/sha256/aa", "aa", 3);
    first.confirmShipped({ episode: "ep_1", fingerprint: "f", objects: 2, bytes: 3 });
    const again = open(dataDir);
    expect(again.has("p/blobs/sha256/aa", "aa")).toBe(true);
    expect(again.has("p/blobs/sha256/aa", "bb")).toBe(false);
    expect(again.shipped("ep_1")?.fingerprint).toBe("f");
    const otherBucket = open(dataDir, "http://s3.test/other");
    expect(otherBucket.has("p/blobs/sha256/aa", "aa")).toBe(false);
    expect(otherBucket.shipped("ep_1")).toBeUndefined();
  });

  test("a torn last line (kill -9 mid-append) is cut off, so the next fact starts on a line of its own", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ura-journal-"));
    open(dataDir).confirmObject("k1", "s1", 1);
    const path = join(dataDir, "shipping", "journal.jsonl");
    appendFileSync(path, '{"event":"object","target":"http://s3.te');
    const reopened = open(dataDir);
    expect(reopened.has("k1", "s1")).toBe(true);
    reopened.confirmObject("k2", "s2", 2);
    expect(
      readFileSync(path, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).key),
    ).toEqual(["k1", "k2"]);
  });
});
