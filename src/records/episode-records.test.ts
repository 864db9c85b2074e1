import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBlobStore } from "./blob-store.ts";
import { createEpisodeRecords } from "./episode-records.ts";

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
      records.exchange(
        "ex_0001",
        "client_request",
        { protocol: "responses", path: "/v1/responses" },
        { json: { body: "{}" } },
      );
      records.exchange("ex_0001", "status", { status: "failed" });
      records.ledger({ type: "closed" });
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
