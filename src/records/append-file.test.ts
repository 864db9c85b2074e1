import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openAppendFile, RecordsWriteError } from "./append-file.ts";
import { createGroupCommit } from "./group-commit.ts";
import { readJsonLines } from "./jsonl-file.ts";

const tempFile = () => join(mkdtempSync(join(tmpdir(), "ura-append-")), "x.jsonl");

describe("openAppendFile", () => {
  test("short writes are continued until the whole line is written", () => {
    const path = tempFile();
    const counts: number[] = [];
    const file = openAppendFile(path, {
      groupCommit: undefined,
      write: (fd, bytes, offset, length) => {
        const n = writeSync(fd, bytes, offset, Math.min(length, 3));
        counts.push(n);
        return n;
      },
    });
    file.append('{"a":"0123456789"}\n');
    file.close();
    expect(counts.length).toBeGreaterThan(1);
    expect(readFileSync(path, "utf8")).toBe('{"a":"0123456789"}\n');
  });

  test("a write the disk refuses halfway is cut back: the file keeps whole lines, the caller gets the error", () => {
    const path = tempFile();
    writeFileSync(path, '{"n":1}\n');
    let calls = 0;
    const file = openAppendFile(path, {
      groupCommit: undefined,
      write: (fd, bytes, offset, length) => {
        calls += 1;
        if (calls === 1) return writeSync(fd, bytes, offset, Math.min(length, 5));
        throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
      },
    });
    let thrown: unknown;
    try {
      file.append('{"n":2,"long":"xxxxxxxxxxxxxxxx"}\n');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RecordsWriteError);
    expect((thrown as RecordsWriteError).code).toBe("ENOSPC");
    expect(readFileSync(path, "utf8")).toBe('{"n":1}\n');
    // A later append lands after the last whole line, not after a torn one.
    calls = 99;
    const again = openAppendFile(path, { groupCommit: undefined });
    again.append('{"n":3}\n');
    again.close();
    expect(readJsonLines(path)).toEqual({ entries: [{ n: 1 }, { n: 3 }], tornTail: undefined, tornLines: 0 });
  });

  test("a write that returns 0 is a failure, never counted as written", () => {
    const path = tempFile();
    const file = openAppendFile(path, { groupCommit: undefined, write: () => 0 });
    expect(() => file.append("{}\n")).toThrow(/write returned 0/);
    expect(readFileSync(path, "utf8")).toBe("");
  });

  test("sync with group commit: callers waiting on one file in the same turn share one fdatasync", async () => {
    const groupCommit = createGroupCommit();
    const files = [tempFile(), tempFile()].map((path) => openAppendFile(path, { groupCommit }));
    for (const file of files) file.append("{}\n");
    await Promise.all(files.map((file) => file.sync()));
    expect(groupCommit.syncs).toBe(2);
    // Nothing new appended: no further fdatasync.
    await Promise.all(files.map((file) => file.sync()));
    expect(groupCommit.syncs).toBe(2);
    // Two callers in the same turn after one append: both wait for the one fdatasync.
    const [a] = files;
    a?.append("{}\n");
    const [first, second] = [a?.sync(), a?.sync()];
    expect(second).toBe(first);
    await first;
    expect(groupCommit.syncs).toBe(3);
    for (const file of files) file.close();
  });
});

describe("readJsonLines", () => {
  test("a torn line mid-file: every whole line before it is kept, it and the rest are reported", () => {
    const path = tempFile();
    writeFileSync(path, '{"n":1}\n{"n":2}\n{"n":3,"cut\n{"n":4}\n');
    const contents = readJsonLines(path);
    expect(contents.entries).toEqual([{ n: 1 }, { n: 2 }]);
    expect(contents.tornLines).toBe(2);
    expect(contents.tornTail).toBe('{"n":3,"cut\n{"n":4}\n');
  });

  test("a torn last line", () => {
    const path = tempFile();
    writeFileSync(path, '{"n":1}\n{"n":2,');
    expect(readJsonLines(path)).toEqual({ entries: [{ n: 1 }], tornTail: '{"n":2,', tornLines: 1 });
  });
});
