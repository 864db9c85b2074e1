import { beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createDataDir, type EpisodeSpec, smokeTurns, writeEpisode } from "../../test/support/dataset-kit.ts";
import { type Codecs, loadCodecs } from "../images/codecs.ts";
import { type ExportSelection, exportDataset } from "./export-dataset.ts";

let codecs: Codecs;
beforeAll(async () => {
  codecs = await loadCodecs();
});

const all: ExportSelection = { includeFailed: false, includeInterrupted: false };

async function exportOf(dataDir: string, selection: Partial<ExportSelection> = {}, inlineImages = false) {
  const outDir = join(createDataDir(), "out");
  const result = await exportDataset({
    dataDir,
    outDir,
    selection: { ...all, ...selection },
    inlineImages,
    secrets: ["control-password-123456"],
    codecs,
    version: "test",
  });
  const lines = readFileSync(join(outDir, "dataset.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { messages: Record<string, unknown>[]; tools?: unknown[] });
  const manifest = JSON.parse(readFileSync(join(outDir, "manifest.json"), "utf8"));
  return { outDir, result, lines, manifest };
}

function dataDirWith(...specs: EpisodeSpec[]): string {
  const dataDir = createDataDir();
  for (const spec of specs) writeEpisode(dataDir, spec, codecs);
  return dataDir;
}

function treeBytes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path);
      else out[path] = readFileSync(join(dir, path)).toString("base64");
    }
  };
  walk("");
  return out;
}

describe("export dataset", () => {
  test("a finished episode becomes one line: the last exchange's upstream request plus its answer, images as files", async () => {
    const { lines, manifest, outDir, result } = await exportOf(
      dataDirWith({ id: "ep_a1", turns: smokeTurns }),
    );
    expect(result.incomplete).toBe(false);
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line?.messages.map((m) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "user",
      "assistant",
      "tool",
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(line?.messages.at(-1)).toEqual({ role: "assistant", content: "Done: the scene was red." });
    expect(line?.tools).toHaveLength(2);
    const images = readdirSync(join(outDir, "images"));
    expect(images).toHaveLength(2);
    for (const name of images) expect(name).toMatch(/^sha256-[0-9a-f]{64}\.webp$/);
    const urls = JSON.stringify(line).match(/images\/sha256-[0-9a-f]{64}\.webp/g);
    expect([...(urls ?? [])].sort()).toEqual(images.map((n) => `images/${n}`).sort());
    expect(manifest.counts).toMatchObject({
      conversations: 1,
      episodes_exported: 1,
      tool_calls: 3,
      images: 2,
    });
    expect(manifest.validation.passed).toBe(true);
    expect(manifest.episodes[0].conversations[0].exchanges).toEqual([
      "ex_0001",
      "ex_0002",
      "ex_0003",
      "ex_0004",
    ]);
    expect(Object.keys(manifest.files)).toEqual([
      "dataset.jsonl",
      ...images.map((n) => `images/${n}`).sort(),
    ]);
  });

  test("a second export of the same records is byte-identical", async () => {
    const dataDir = dataDirWith(
      { id: "ep_a1", turns: smokeTurns },
      { id: "ep_b2", client: "claude", turns: smokeTurns },
    );
    const first = await exportOf(dataDir);
    const second = await exportOf(dataDir);
    expect(treeBytes(second.outDir)).toEqual(treeBytes(first.outDir));
    expect(first.lines).toHaveLength(2);
  });

  test("--inline-images writes data URLs and no image files", async () => {
    const { lines, outDir } = await exportOf(dataDirWith({ id: "ep_a1", turns: smokeTurns }), {}, true);
    expect(JSON.stringify(lines[0])).toContain('"url":"data:image/webp;base64,');
    expect(readdirSync(join(outDir, "images"))).toEqual([]);
  });

  test("only successful finishes by default; failed with --include-failed; interrupted skipped unless asked", async () => {
    const dataDir = dataDirWith(
      { id: "ep_ok", turns: smokeTurns },
      { id: "ep_failed", state: "failed", submitted: false, turns: smokeTurns.slice(0, 2) },
      { id: "ep_running", state: "running", turns: smokeTurns.slice(0, 2) },
    );
    const byDefault = await exportOf(dataDir);
    expect(byDefault.manifest.episodes.map((e: { id: string }) => e.id)).toEqual(["ep_ok"]);
    expect(byDefault.manifest.skipped).toEqual([
      expect.objectContaining({ episode: "ep_failed", kind: "not_successful" }),
      expect.objectContaining({ episode: "ep_running", kind: "interrupted" }),
    ]);
    expect(byDefault.result.incomplete).toBe(false);
    const everything = await exportOf(dataDir, { includeFailed: true, includeInterrupted: true });
    expect(everything.manifest.episodes.map((e: { id: string }) => e.id)).toEqual([
      "ep_failed",
      "ep_ok",
      "ep_running",
    ]);
    // The interrupted episode's last delivered answer is a call without a result: the line ends on it.
    expect(everything.lines[2]?.messages.at(-1)).toMatchObject({
      role: "assistant",
      tool_calls: [expect.anything()],
    });
  });

  test("filters by client, model and creation date", async () => {
    const dataDir = dataDirWith(
      { id: "ep_c1", client: "claude", turns: smokeTurns, createdAt: "2026-11-30T12:00:00.000Z" },
      {
        id: "ep_c2",
        client: "gemini",
        model: "qwen3-vl-max",
        turns: smokeTurns,
        createdAt: "2026-12-01T12:00:00.000Z",
      },
    );
    const ids = async (selection: Partial<ExportSelection>) =>
      (await exportOf(dataDir, selection)).manifest.episodes.map((e: { id: string }) => e.id);
    expect(await ids({ clients: ["claude"] })).toEqual(["ep_c1"]);
    expect(await ids({ models: ["qwen3-vl-max"] })).toEqual(["ep_c2"]);
    expect(await ids({ since: new Date("2026-12-01T00:00:00Z") })).toEqual(["ep_c2"]);
    expect(await ids({ until: new Date("2026-11-30T23:59:59Z") })).toEqual(["ep_c1"]);
    expect(await ids({ episodes: ["ep_c2", "ep_nope"] })).toEqual(["ep_c2"]);
  });

  test("a revoked exchange is no part of any conversation", async () => {
    const turns = [
      smokeTurns[0],
      { ...smokeTurns[1], status: "revoked" as const },
      smokeTurns[1],
      smokeTurns[2],
      smokeTurns[3],
    ];
    const { lines, manifest } = await exportOf(
      dataDirWith({ id: "ep_r", turns: turns as typeof smokeTurns }),
    );
    expect(lines).toHaveLength(1);
    expect(manifest.episodes[0].conversations[0].exchanges).toEqual([
      "ex_0001",
      "ex_0003",
      "ex_0004",
      "ex_0005",
    ]);
  });

  test("a torn line in a cleanly closed episode skips the episode, named, and the rest still exports", async () => {
    const dataDir = dataDirWith({ id: "ep_ok", turns: smokeTurns }, { id: "ep_torn", turns: smokeTurns });
    appendFileSync(
      join(dataDir, "episodes", "ep_torn", "exchanges.jsonl"),
      '{"at":"2026-12-01","exchange":"ex_0005","sta',
    );
    const { lines, manifest, result } = await exportOf(dataDir);
    expect(result.incomplete).toBe(true);
    expect(lines).toHaveLength(1);
    expect(manifest.skipped).toEqual([
      {
        episode: "ep_torn",
        kind: "corrupt",
        reason: expect.stringContaining("exchanges.jsonl ends in a torn line"),
      },
    ]);
  });

  test("a missing blob skips the conversation that needs it, naming the blob", async () => {
    const dataDir = dataDirWith({ id: "ep_blob", turns: smokeTurns });
    const blobs = join(dataDir, "blobs", "sha256");
    const ok = await exportOf(dataDir);
    expect(ok.lines).toHaveLength(1);
    const [gone] = readdirSync(blobs).sort();
    rmSync(join(blobs, gone ?? ""));
    const { lines, manifest, result } = await exportOf(dataDir);
    expect(result.incomplete).toBe(true);
    expect(lines).toEqual([]);
    expect(manifest.skipped).toEqual([
      expect.objectContaining({
        episode: "ep_blob",
        kind: "corrupt",
        reason: expect.stringContaining(`blob sha256:${gone} is missing`),
      }),
    ]);
  });

  test("a line failing validation is not written; the manifest says which check and why", async () => {
    const dataDir = dataDirWith({
      id: "ep_bad",
      turns: [{ calls: [{ name: "ura_finish", arguments: '{"answer":7}' }] }, { text: "ok" }],
    });
    const { lines, manifest, result } = await exportOf(dataDir);
    expect(lines).toEqual([]);
    expect(result.incomplete).toBe(true);
    expect(manifest.validation.passed).toBe(false);
    expect(manifest.validation.checks).toContainEqual({
      name: "arguments are JSON matching the tool's schema",
      failed: 1,
    });
    expect(manifest.skipped[0]).toMatchObject({ kind: "invalid", reason: expect.stringContaining("answer") });
  });

  test("a secret in the records keeps the line out, and the manifest does not repeat it", async () => {
    const dataDir = dataDirWith({ id: "ep_s", turns: [{ text: "the password is control-password-123456" }] });
    const { lines, manifest, outDir } = await exportOf(dataDir);
    expect(lines).toEqual([]);
    expect(manifest.skipped[0].reason).toContain("no secrets");
    expect(readFileSync(join(outDir, "manifest.json"), "utf8")).not.toContain("control-password-123456");
  });

  test("an unreadable episode.json is reported by name", async () => {
    const dataDir = dataDirWith({ id: "ep_x", turns: smokeTurns });
    writeFileSync(join(dataDir, "episodes", "ep_x", "episode.json"), "{");
    const { manifest } = await exportOf(dataDir);
    expect(manifest.skipped).toEqual([
      {
        episode: "ep_x",
        kind: "corrupt",
        reason: expect.stringContaining("episode.json is missing or not JSON"),
      },
    ]);
  });
});

describe("negative examples", () => {
  test("the manifest marks each line's calls that never ran (rejected, rate limited) with who and why", async () => {
    const dataDir = dataDirWith({ id: "ep_neg1", turns: smokeTurns });
    const first = await exportOf(dataDir);
    const [line] = first.lines;
    const callIds = (line?.messages ?? []).flatMap(
      (m) => (m.tool_calls as { id: string; function: { name: string } }[] | undefined) ?? [],
    );
    expect(first.manifest.episodes[0].conversations[0].negative_calls).toEqual([]);
    expect(first.manifest.counts.negative_calls).toBe(0);
    const [observed, recorded] = [callIds[0], callIds[1]];
    if (!observed || !recorded) throw new Error("the smoke line has tool calls");
    const ledger = join(dataDir, "episodes", "ep_neg1", "ledger.jsonl");
    appendFileSync(
      ledger,
      `${JSON.stringify({ type: "rejected", at: 1, callId: observed.id, argsSha256: "0".repeat(64), by: "ui", reason: "not now" })}\n${JSON.stringify({ type: "rate_limited", at: 2, callId: recorded.id, limit: "per_minute", reason: "rate limit of record" })}\n`,
    );
    const { manifest, lines } = await exportOf(dataDir);
    // The line is the same; the manifest says which of its calls are negative examples.
    expect(lines).toEqual(first.lines);
    expect(manifest.episodes[0].conversations[0].negative_calls).toEqual([
      { call_id: observed.id, tool: observed.function.name, status: "rejected", by: "ui", reason: "not now" },
      {
        call_id: recorded.id,
        tool: recorded.function.name,
        status: "rate_limited",
        by: "per_minute",
        reason: "rate limit of record",
      },
    ]);
    expect(manifest.counts.negative_calls).toBe(2);
  });
});
