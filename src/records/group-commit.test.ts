import { describe, expect, test } from "bun:test";
import { heldDatasync, turn } from "../../test/support/held-datasync.ts";
import { createGroupCommit } from "./group-commit.ts";

describe("group commit", () => {
  test("syncs asked for while a file's round is in flight share the next round, started when it completes", async () => {
    const disk = heldDatasync();
    const commit = createGroupCommit({ fdatasync: disk.fdatasync });
    const settled: string[] = [];
    void commit.sync(7).then(() => settled.push("first"));
    await turn();
    expect(disk.pending.map((p) => p.fd)).toEqual([7]);
    // Written after the first fdatasync began: it cannot cover them, and no second one runs beside it.
    void commit.sync(7).then(() => settled.push("second"));
    await turn();
    void commit.sync(7).then(() => settled.push("third"));
    await turn();
    expect(disk.pending).toHaveLength(1);
    disk.complete();
    await turn();
    expect(settled).toEqual(["first"]);
    // One round for both that waited.
    expect(disk.pending.map((p) => p.fd)).toEqual([7]);
    disk.complete();
    await turn();
    expect(settled).toEqual(["first", "second", "third"]);
    expect(commit.syncs).toBe(2);
  });

  test("different files are synced side by side; a failed round rejects only its own waiters", async () => {
    const disk = heldDatasync();
    const commit = createGroupCommit({ fdatasync: disk.fdatasync });
    const a = commit.sync(1);
    const b = commit.sync(2);
    await turn();
    expect(disk.pending.map((p) => p.fd)).toEqual([1, 2]);
    const later = commit.sync(1);
    disk.complete(Object.assign(new Error("EIO"), { code: "EIO" }));
    disk.complete();
    await expect(a).rejects.toThrow("EIO");
    await b;
    await turn();
    // The failure does not stop the file's next round.
    expect(disk.pending.map((p) => p.fd)).toEqual([1]);
    disk.complete();
    await later;
    expect(commit.syncs).toBe(3);
  });

  test("with `now`, an idle file's round starts at once; a file in flight still waits for its next round", async () => {
    const disk = heldDatasync();
    const commit = createGroupCommit({ fdatasync: disk.fdatasync });
    const first = commit.sync(3, { now: true });
    // Already under way before this turn ends: the caller's remaining work overlaps it.
    expect(disk.pending.map((p) => p.fd)).toEqual([3]);
    const second = commit.sync(3, { now: true });
    expect(disk.pending).toHaveLength(1);
    disk.complete();
    await first;
    expect(disk.pending.map((p) => p.fd)).toEqual([3]);
    disk.complete();
    await second;
    expect(commit.syncs).toBe(2);
  });
});
