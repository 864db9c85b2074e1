/**
 * kill -9 at random moments of the smoke episode, restarting on the same data
 * directory each time: every record file of every episode stays readable (a
 * valid prefix, a torn tail only ever at the end), every restart restores every
 * episode, none is left `running`, and no call claimed before a restart is ever
 * claimed again. The delays are random; the seed is printed on failure.
 * Needs `make build`.
 */
import { expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { episodeListSchema } from "../../src/episodes/episode-status.ts";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import { driveSmokeEpisode, fileUpstream, seededRandom, startSidecar } from "../support/lifecycle-kit.ts";
import type { SidecarProcess } from "../support/sidecar-process.ts";

const upstream = await fileUpstream(120_000);

const config = { executor: { kind: "inert", ack_delay_ms: 15, receipt_delay_ms: 40 }, log_level: "warn" };

test("kill -9 anywhere: records stay readable and every restart restores every episode", async () => {
  const seed = Number(process.env.URA_KILL_SEED ?? Date.now() % 100_000);
  const next = seededRandom(seed);
  let dataDir: string | undefined;
  const claimedBefore = new Map<string, Set<string>>();
  const rounds = 6;
  try {
    for (let round = 0; round < rounds; round++) {
      const sidecar: SidecarProcess = await startSidecar(upstream, config, dataDir);
      dataDir = sidecar.dataDir;
      const restored = episodeListSchema.parse(await (await sidecar.control("/episodes")).json());
      // Every episode of earlier rounds is back, none running, and nothing new was claimed for it.
      expect(restored.episodes.map((e) => e.id).sort()).toEqual([...claimedBefore.keys()].sort());
      for (const episode of restored.episodes) {
        expect(episode.state).not.toBe("running");
        expect([...episode.ledger.claimed].sort()).toEqual([...(claimedBefore.get(episode.id) ?? [])].sort());
      }
      const episode = await sidecar.createEpisode({ client: "codex" });
      const driving = driveSmokeEpisode(episode);
      // Somewhere between the first request and the end of the episode (about 300–450 ms here).
      await Bun.sleep(Math.floor(next() * 450));
      sidecar.proc.kill("SIGKILL");
      await sidecar.proc.exited;
      await driving;

      // Every record file of every episode reads as a valid prefix.
      for (const id of readdirSync(join(dataDir, "episodes"))) {
        const dir = join(dataDir, "episodes", id);
        for (const file of readdirSync(dir).filter((f) => f.endsWith(".jsonl"))) {
          expect(() => readJsonLines(join(dir, file))).not.toThrow();
        }
        const claimed = readJsonLines<{ type: string; callId?: string }>(join(dir, "ledger.jsonl"))
          .entries.filter((e) => e.type === "claimed")
          .map((e) => e.callId ?? "");
        claimedBefore.set(id, new Set(claimed));
      }
    }
    const last = await startSidecar(upstream, config, dataDir);
    const { episodes } = episodeListSchema.parse(await (await last.control("/episodes")).json());
    expect(episodes).toHaveLength(rounds);
    await last.stopCleanly();
  } catch (error) {
    throw new Error(`kill-anywhere failed with URA_KILL_SEED=${seed}: ${(error as Error).message}`);
  }
});
