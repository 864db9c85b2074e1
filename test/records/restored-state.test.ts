/**
 * `records list` on the compiled binary gives an episode's last known state, not
 * the one its episode.json was last written with: an episode running when its
 * sidecar was killed (kill -9) is restored as `interrupted` by the next start,
 * which never rewrites episode.json, and `records list` says `interrupted` from
 * then on, also after that sidecar stopped cleanly.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary, startSidecarProcess } from "../support/sidecar-process.ts";

setDefaultTimeout(30_000);

test("an episode running at kill -9 is listed as interrupted once a later start restored it", async () => {
  const first = await startSidecarProcess();
  const episode = await first.createEpisode();
  const list = async () => (await runBinary(["records", "list", "--data-dir", first.dataDir])).stdout;
  expect(await list()).toBe(`${episode.id} exchanges=0 state=running\n`);
  first.proc.kill("SIGKILL");
  expect(await first.proc.exited).not.toBe(0);

  const second = await startSidecarProcess({ dataDir: first.dataDir });
  try {
    expect((await second.episode(episode.id)).state).toBe("interrupted");
    // episode.json is what the killed process left; the restart file says what the episode is now.
    const described = JSON.parse(readFileSync(join(episode.records_dir, "episode.json"), "utf8"));
    expect(described.state).toBe("running");
    const restarted = JSON.parse(
      readFileSync(join(episode.records_dir, "restart-001.jsonl"), "utf8").split("\n")[0] ?? "",
    );
    expect(restarted).toMatchObject({ type: "restarted", previous_state: "running", state: "interrupted" });
    expect(await list()).toBe(`${episode.id} exchanges=0 state=interrupted\n`);
  } finally {
    await second.stopCleanly();
  }
  expect(await list()).toBe(`${episode.id} exchanges=0 state=interrupted\n`);
});
