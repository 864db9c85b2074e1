import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadCodecs } from "../images/codecs.ts";
import { webpSettingsSchema } from "../images/settings.ts";
import { sha256Hex } from "../lib/sha256.ts";
import { createBlobStore } from "../records/blob-store.ts";
import { checkSmokeEpisode, readSmokeRecords } from "./smoke-checks.ts";

const codecs = await loadCodecs();
const webp = codecs.encodeWebpLossless(
  { width: 2, height: 2, data: new Uint8Array(16).fill(200) },
  webpSettingsSchema.parse({}),
);
const finished = { state: "finished", failure: null } as const;

const jsonl = (lines: object[]) => `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`;
const batch = (batchId: string, calls: [string, string, object][]) => ({
  type: "registered",
  batchId,
  calls: calls.map(([id, tool, args]) => ({ id, tool, args })),
});
const claimed = (callId: string) => ({ type: "claimed", callId });
const receipt = (callId: string, data: object) => ({ type: "receipt", callId, result: { ok: true, data } });

/** The records the smoke episode leaves when the model follows the script (the frame as a blob reference). */
function smokeEpisodeRecords(): string {
  const data = mkdtempSync(join(tmpdir(), "ura-smoke-"));
  const dir = join(data, "episodes", "ep_1");
  mkdirSync(dir, { recursive: true });
  const hex = createBlobStore(data).put(webp);
  writeFileSync(
    join(dir, "ledger.jsonl"),
    jsonl([
      batch("b1", [["c1", "observe", {}]]),
      claimed("c1"),
      receipt("c1", { nonce: "n1" }),
      batch("b2", [
        ["c2", "record", { nonce: "n1" }],
        ["c3", "record", { nonce: "n1" }],
      ]),
      claimed("c2"),
      claimed("c3"),
      receipt("c2", {}),
      receipt("c3", {}),
      batch("b3", [["c4", "finish", { answer: "red" }]]),
      claimed("c4"),
      receipt("c4", { submitted: true, correct: true }),
    ]),
  );
  const frame = { $blob: `sha256:${hex}`, media_type: "image/webp", bytes: webp.length };
  const request = (withFrame: boolean) => ({
    model: "m",
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "go" },
          ...(withFrame ? [{ type: "image_url", image_url: { url: frame } }] : []),
        ],
      },
    ],
  });
  const exchange = (id: string, withFrame: boolean, text: string | null) => [
    { exchange: id, stage: "client_request" },
    { exchange: id, stage: "upstream_request", body: request(withFrame) },
    { exchange: id, stage: "upstream_response", validated: { text, toolCalls: text ? [] : [{}] } },
    { exchange: id, stage: "status", status: "delivered" },
  ];
  writeFileSync(
    join(dir, "exchanges.jsonl"),
    jsonl([
      ...exchange("x1", false, null),
      ...exchange("x2", true, null),
      ...exchange("x3", true, null),
      ...exchange("x4", true, "done"),
    ]),
  );
  return dir;
}

const check = (dir: string, name: string) =>
  checkSmokeEpisode(readSmokeRecords(dir), finished).find((c) => c.name.startsWith(name));

describe("the smoke episode's checks, from the records", () => {
  test("an episode that followed the script passes every check", () => {
    const checks = checkSmokeEpisode(readSmokeRecords(smokeEpisodeRecords()), finished);
    expect(checks.filter((c) => !c.pass)).toEqual([]);
    expect(checks).toHaveLength(6);
  });

  test("a torn last ledger line fails the complete-records check and is named in its evidence", () => {
    const dir = smokeEpisodeRecords();
    appendFileSync(join(dir, "ledger.jsonl"), '{"type":"receipt","callId":"c');
    const complete = check(dir, "complete records");
    expect(complete?.pass).toBe(false);
    expect(complete?.evidence).toContain("ledger.jsonl: torn last line");
    // The whole lines before it still count.
    expect(check(dir, "call order")?.pass).toBe(true);
  });

  test("a line that is not JSON before the end: every records check fails naming the file and line, nothing throws", () => {
    const dir = smokeEpisodeRecords();
    writeFileSync(join(dir, "exchanges.jsonl"), `{"exchange":"x1","stage":"client_request"}\nnot json\n{}\n`);
    const records = readSmokeRecords(dir);
    expect(records.upstream).toEqual([]);
    const checks = checkSmokeEpisode(records, finished);
    for (const name of ["image reached upstream", "complete records"]) {
      const failed = checks.find((c) => c.name.startsWith(name));
      expect(failed?.pass).toBe(false);
      expect(failed?.evidence).toContain("exchanges.jsonl: line 2 is not JSON");
    }
  });

  test("a frame whose blob is missing fails the image check naming the blob", () => {
    const dir = smokeEpisodeRecords();
    const hex = sha256Hex(webp);
    rmSync(join(dir, "..", "..", "blobs", "sha256", hex));
    const image = check(dir, "image reached upstream");
    expect(image?.pass).toBe(false);
    expect(image?.evidence).toContain(`blob sha256:${hex} is missing`);
  });
});
