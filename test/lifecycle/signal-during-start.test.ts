/**
 * SIGTERM while the compiled binary is still starting: the data directory is
 * locked and its episodes are being restored (each restore writes a restart
 * file), the socket is not open yet. The stop must be the ordinary clean one
 * once the start has finished: exit 0, every restored episode's restart file
 * complete and ending in `stopped`, the lock let go (the next start on the same
 * directory restores them all). The default action would end the process between
 * the lock and the handler, skipping the drain and the freeze. Needs `make build`.
 */
import { expect, test } from "bun:test";
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import { fileUpstream, firstTurn, startSidecar, waitFor } from "../support/lifecycle-kit.ts";
import { binaryPath, controlPassword } from "../support/sidecar-process.ts";

const upstream = await fileUpstream(120_000);

// Enough episodes that restoring them takes a while after the lock is taken, even on an idle machine.
const copies = 100;

/** A data directory holding `copies` + 1 interrupted episodes (one real, the rest copies of it). */
async function dataDirToRestore(): Promise<{ dataDir: string; ids: string[] }> {
  const first = await startSidecar(upstream, { executor: { kind: "inert" } });
  const episode = await first.createEpisode({ client: "codex" });
  await firstTurn(episode);
  first.proc.kill("SIGKILL");
  await first.proc.exited;
  const episodes = join(first.dataDir, "episodes");
  const ids = [episode.id];
  for (let i = 0; i < copies; i++) {
    const id = `ep_copy${i}`;
    cpSync(join(episodes, episode.id), join(episodes, id), { recursive: true });
    const description = join(episodes, id, "episode.json");
    writeFileSync(description, readFileSync(description, "utf8").replaceAll(episode.id, id));
    ids.push(id);
  }
  return { dataDir: first.dataDir, ids };
}

test("SIGTERM while restoring episodes at start-up: a clean stop once started, exit 0, restart files complete, lock released", async () => {
  const { dataDir, ids } = await dataDirToRestore();
  const proc = Bun.spawn(
    [binaryPath, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--log-level", "info"],
    {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? "/tmp",
        URA_CONTROL_PASSWORD: controlPassword,
        URA_UPSTREAM_URL: upstream.url,
        URA_UPSTREAM_API_KEY: "sk-test-upstream-secret-key",
      },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const output = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]).then(
    (texts) => texts.join("\n"),
  );
  // The lock names its holder as soon as it is taken: the first thing the start does.
  const lock = join(dataDir, "lock");
  await waitFor(
    "the data directory lock",
    () => (existsSync(lock) && readFileSync(lock, "utf8").startsWith(`pid ${proc.pid},`) ? true : undefined),
    30_000,
    1,
  );
  proc.kill("SIGTERM");
  const code = await proc.exited;
  const printed = await output;
  // The tail: one log line per restored episode comes before it.
  if (code !== 0)
    throw new Error(
      `exit ${code} (${proc.signalCode ?? "no signal"}); output's end:\n${printed.slice(-4000)}`,
    );
  expect(printed).toMatch(/"msg":"shutting down","reason":"signal SIGTERM/);
  expect(printed).toContain('"msg":"shutdown complete"');

  for (const id of ids) {
    const dir = join(dataDir, "episodes", id);
    const restartFiles = readdirSync(dir).filter((f) => f.startsWith("restart-"));
    expect(restartFiles).toEqual(["restart-001.jsonl"]);
    const restart = readJsonLines<{ type: string }>(join(dir, "restart-001.jsonl"));
    expect(restart.tornTail).toBeUndefined();
    expect(restart.entries.map((e) => e.type).at(-1)).toBe("stopped");
  }

  const again = await startSidecar(upstream, {}, dataDir);
  try {
    // Printed just after the banner the start waits for.
    const restored = `restored ${ids.length} episode(s) read-only`;
    await waitFor("the restore line", () => (again.output().includes(restored) ? true : undefined));
  } finally {
    await again.stopCleanly();
  }
});
