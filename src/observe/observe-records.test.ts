import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBlobStore } from "../records/blob-store.ts";
import { createEpisodeRecords } from "../records/episode-records.ts";
import { observeRecords } from "./observe-records.ts";
import type { ObservedEvent } from "./observer.ts";

test("each write becomes an event after it reached the records; a failed write is a records_failure", () => {
  const dir = mkdtempSync(join(tmpdir(), "ura-observe-"));
  const events: ObservedEvent[] = [];
  const records = observeRecords(
    createEpisodeRecords({ dir, clock: () => 5, redact: (l) => l, blobs: createBlobStore(dir) }),
    "ep_1",
    { observe: (e) => events.push(e) },
    () => 7,
  );
  records.ledger({ type: "admission_closed", at: 5, reason: "test" });
  records.auxiliary({ path: "/x", status: 400 });
  expect(events).toEqual([
    { kind: "ledger", episode: "ep_1", at: 7, event: { type: "admission_closed", at: 5, reason: "test" } },
    { kind: "auxiliary", episode: "ep_1", at: 7, data: { path: "/x", status: 400 } },
  ]);
  expect(records.frozen).toBe(false);
  records.freeze({ reason: "test" });
  // Getters read the live state of the wrapped records.
  expect(records.frozen).toBe(true);
  expect(() => records.ledger({ type: "admission_closed", at: 6, reason: "x" })).toThrow(/frozen/);
  expect(events.at(-1)).toMatchObject({ kind: "records_failure", episode: "ep_1", file: "ledger.jsonl" });
  rmSync(dir, { recursive: true });
});
