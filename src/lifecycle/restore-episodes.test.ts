import { describe, expect, test } from "bun:test";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import defaultManifestJson from "../../manifests/tools/robot.json" with { type: "json" };
import { configSchema } from "../config/schema.ts";
import { createEpisodeStore } from "../episodes/episode-store.ts";
import { credentialMatches } from "../lib/credentials.ts";
import { createRandomIds } from "../lib/ids.ts";
import { createLogger } from "../lib/logger.ts";
import { manifestSchema } from "../manifest/manifest-schema.ts";
import { createBlobStore } from "../records/blob-store.ts";
import { readJsonLines } from "../records/jsonl-file.ts";
import { drainEpisodes, freezeEpisodes } from "./drain-episodes.ts";
import { restoreEpisodes } from "./restore-episodes.ts";

const defaultManifest = manifestSchema.parse(defaultManifestJson);
const silent = createLogger({ level: "error", redact: (l) => l, write: () => {} });

function setup() {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-restore-"));
  const config = configSchema.parse({
    data_dir: dataDir,
    delivery: { wait_ms: 50, previous_ack_wait_ms: 50 },
  });
  const store = createEpisodeStore({
    config,
    dataDir,
    blobs: createBlobStore(dataDir),
    defaultManifest,
    ids: createRandomIds(),
    clock: Date.now,
    redact: (l) => l,
    registerSecret: () => {},
    baseUrl: () => "http://127.0.0.1:1",
  });
  const restore = () =>
    restoreEpisodes({
      dataDir,
      blobs: createBlobStore(dataDir),
      config,
      defaultManifest,
      clock: Date.now,
      redact: (l) => l,
      logger: silent,
    });
  return { dataDir, store, restore };
}

/** A live episode with one delivered batch of two calls: the first claimed and submitted (no receipt), the second unclaimed. */
async function episodeWithClaimedCall(store: ReturnType<typeof setup>["store"]) {
  const episode = store.create({ max_turns: 0 });
  episode.ledger.register({
    batchId: "ex_0001",
    calls: [
      { id: "call_a", modelName: "mcp__ura__record", tool: "record", args: { nonce: "n1" } },
      { id: "call_b", modelName: "mcp__ura__record", tool: "record", args: { nonce: "n2" } },
    ],
  });
  episode.ledger.delivered("ex_0001");
  const admission = await episode.ledger.admit({
    tool: "record",
    args: { nonce: "n1" },
    identity: { kind: "call_id", value: "call_a" },
  });
  admission.submitted();
  return episode;
}

describe("restoreEpisodes", () => {
  test("a running episode comes back interrupted, its claimed call uncertain, nothing claimable, credentials by digest only", async () => {
    const { store, restore, dataDir } = setup();
    const live = await episodeWithClaimedCall(store);
    const stored = readFileSync(join(live.records.dir, "episode.json"), "utf8");
    expect(stored).not.toContain(live.ingressKey);
    expect(stored).not.toContain(live.mcpToken);
    expect(stored).toContain("ingress_key_sha256");
    const ledgerBefore = readFileSync(join(live.records.dir, "ledger.jsonl"), "utf8");

    const { episodes, problems } = restore();
    expect(problems).toEqual([]);
    const [episode] = episodes;
    if (!episode) throw new Error("not restored");
    expect(episode.id).toBe(live.id);
    expect(episode.state).toBe("interrupted");
    expect(episode.describe().ledger.uncertain).toEqual(["call_a"]);
    expect(episode.describe()).toMatchObject({
      restart: {
        previous_state: "running",
        state: "interrupted",
        uncertain: ["call_a"],
        records_frozen: false,
        credentials: "sha256",
      },
    });
    expect(episode.closedReason()).toContain("restored read-only");

    // Old credentials still authenticate (so a replay meets the ledger), others do not.
    expect(credentialMatches(live.ingressKey, episode.ingressKey)).toBe(true);
    expect(credentialMatches(live.mcpToken, episode.mcpToken)).toBe(true);
    expect(credentialMatches(live.ingressKey, episode.mcpToken)).toBe(false);
    expect(credentialMatches(episode.mcpToken, episode.mcpToken)).toBe(false);

    // Neither the claimed nor the unclaimed call can be claimed again.
    for (const [callId, nonce] of [
      ["call_a", "n1"],
      ["call_b", "n2"],
    ] as const) {
      await expect(
        episode.ledger.admit({
          tool: "record",
          args: { nonce },
          identity: { kind: "call_id", value: callId },
        }),
      ).rejects.toThrow(/restarted/);
    }
    // The earlier process's files are untouched; the restart writes its own file.
    expect(readFileSync(join(live.records.dir, "ledger.jsonl"), "utf8")).toBe(ledgerBefore);
    const restart = readJsonLines<Record<string, unknown>>(
      join(dataDir, "episodes", live.id, "restart-001.jsonl"),
    );
    expect(restart.entries.map((l) => l.type)).toEqual(["restarted", "ledger", "ledger", "ledger"]);
    expect(restart.entries[1]).toMatchObject({ event: { type: "interrupted", uncertain: ["call_a"] } });
    expect(restart.entries[2]).toMatchObject({ event: { type: "refused", code: "admission_closed" } });
  });

  test("a torn ledger tail is reported, not fatal; a second restart writes restart-002 and stays interrupted", async () => {
    const { store, restore } = setup();
    const live = await episodeWithClaimedCall(store);
    appendFileSync(join(live.records.dir, "ledger.jsonl"), '{"type":"receipt","callId":"call_a","res');
    const first = restore().episodes[0];
    expect(first?.describe()).toMatchObject({
      state: "interrupted",
      restart: { torn_tails: { "ledger.jsonl": { chars: 40, lines: 1 } } },
    });
    expect(first?.describe().ledger.uncertain).toEqual(["call_a"]);

    const second = restore().episodes[0];
    expect(second?.state).toBe("interrupted");
    expect(second?.describe().ledger.uncertain).toEqual(["call_a"]);
    expect(
      readdirSync(live.records.dir)
        .filter((f) => f.startsWith("restart-"))
        .sort(),
    ).toEqual(["restart-001.jsonl", "restart-002.jsonl"]);
  });

  test("a torn line mid-ledger (a crash, then more lines): the whole lines before it are replayed, the rest reported", async () => {
    const { store, restore } = setup();
    const live = await episodeWithClaimedCall(store);
    const path = join(live.records.dir, "ledger.jsonl");
    appendFileSync(
      path,
      '{"type":"receipt","callId":"call_a","res\n{"type":"admission_closed","at":1,"reason":"x"}\n',
    );
    const restored = restore().episodes[0];
    expect(restored?.describe()).toMatchObject({
      state: "interrupted",
      restart: { torn_tails: { "ledger.jsonl": { lines: 2 } }, unreadable: {} },
    });
    // The claim before the torn line is kept: the call is uncertain, not forgotten.
    expect(restored?.describe().ledger.uncertain).toEqual(["call_a"]);
    expect(restored?.describe().ledger.claimed).toEqual(["call_a"]);
  });

  test("frozen records stay frozen: finished stays finished; model work and writes go to the restart file", async () => {
    const { store, restore } = setup();
    const live = store.create({ max_turns: 0 });
    live.finish({ answer: "red" });
    const drain = await drainEpisodes([live], { deadlineMs: 1000 });
    expect(drain.complete).toBe(true);
    freezeEpisodes([live], drain, "test");
    const files = readdirSync(live.records.dir).sort();
    const frozen = readFileSync(join(live.records.dir, "frozen.json"), "utf8");

    const episode = restore().episodes[0];
    expect(episode?.state).toBe("finished");
    expect(episode?.result).toEqual({ answer: "red" });
    expect(episode?.describe()).toMatchObject({
      restart: { records_frozen: true, frozen_marker: { complete: true, reason: "test" } },
    });
    expect(episode?.closedReason()).toContain("no further model exchanges");
    expect(readFileSync(join(live.records.dir, "frozen.json"), "utf8")).toBe(frozen);
    expect(readdirSync(live.records.dir).sort()).toEqual([...files, "restart-001.jsonl"].sort());
  });

  test("directories without a readable description are reported and skipped", () => {
    const { restore, dataDir, store } = setup();
    store.create({ max_turns: 0 });
    mkdirSync(join(dataDir, "episodes", "ep_broken"), { recursive: true });
    writeFileSync(join(dataDir, "episodes", "ep_broken", "episode.json"), "{");
    mkdirSync(join(dataDir, "episodes", "not-an-episode"), { recursive: true });
    const { episodes, problems } = restore();
    expect(episodes).toHaveLength(1);
    expect(problems.map((p) => p.dir.split("/").at(-1)).sort()).toEqual(["ep_broken", "not-an-episode"]);
    expect(existsSync(join(dataDir, "episodes", "ep_broken", "restart-001.jsonl"))).toBe(false);
  });
});

describe("drainEpisodes", () => {
  test("overrunning the deadline is reported with the unfinished call, and the marker says complete:false", async () => {
    const { store } = setup();
    const live = await episodeWithClaimedCall(store);
    const drain = await drainEpisodes([live], { deadlineMs: 30 });
    expect(drain.complete).toBe(false);
    expect(drain.unfinishedCalls.get(live.id)).toEqual(["call_a"]);
    const markers = freezeEpisodes([live], drain, "test");
    expect(markers.get(live.id)).toMatchObject({
      drain: "deadline_overrun",
      complete: false,
      unfinished: ["call_a"],
    });
    expect(live.records.frozen).toBe(true);
    expect(() => live.records.ledger({ type: "admission_closed", at: 1, reason: "late" })).toThrow(/frozen/);
  });

  test("waits for a handler that is still running", async () => {
    const { store } = setup();
    const live = store.create({ max_turns: 0 });
    let done = false;
    live.track(Bun.sleep(40).then(() => (done = true)));
    const drain = await drainEpisodes([live], { deadlineMs: 1000 });
    expect(done).toBe(true);
    expect(drain.complete).toBe(true);
  });
});

test("a restored episode's uncertain calls do not hold up the next shutdown", async () => {
  const { store, restore } = setup();
  await episodeWithClaimedCall(store);
  const [episode] = restore().episodes;
  if (!episode) throw new Error("not restored");
  const drain = await drainEpisodes([episode], { deadlineMs: 200 });
  expect(drain.complete).toBe(true);
  expect(drain.elapsedMs).toBeLessThan(150);
  expect(freezeEpisodes([episode], drain, "test").get(episode.id)).toMatchObject({
    complete: true,
    unfinished: [],
  });
});

test("cancelling a restored episode answers at once, listing its uncertain calls", async () => {
  const { store, restore } = setup();
  await episodeWithClaimedCall(store);
  const [episode] = restore().episodes;
  if (!episode) throw new Error("not restored");
  const started = Date.now();
  expect(await episode.cancel("test", 5_000)).toEqual({ unfinished: ["call_a"] });
  expect(Date.now() - started).toBeLessThan(1_000);
  expect(episode.state).toBe("interrupted");
});
