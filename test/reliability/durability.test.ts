/**
 * What the records promise, against the compiled binary: a full disk fails the
 * exchange or callback at hand (in its protocol's envelope / as an MCP tool
 * error), never the process, and a restart on a full disk still shows the
 * episode; a short write is never counted as written; what the model answered is
 * on disk before the answer is delivered; a second sidecar on the same data
 * directory is refused. The full-disk cases run on a small tmpfs (root, as in
 * CI) and skip with the reason when it cannot be mounted.
 * Needs `make build` (dist/ura-sidecar).
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import {
  callBack,
  cannedUpstreamForFile,
  deliveredCalls,
  exchangesOf,
  ledgerOf,
  mcpClient,
  responsesTurn,
  stallAfterFirstBytes,
  startHardenedSidecar,
  textOf,
} from "../support/hardening-kit.ts";
import { type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";
import { mountSmallDisk, type SmallDisk } from "../support/small-disk.ts";

setDefaultTimeout(30_000);

const upstream = cannedUpstreamForFile();

const alive = async (url: string) => (await fetch(`${url}/health`).catch(() => undefined))?.status === 200;

describe("a full disk", () => {
  const disk = mountSmallDisk(4096);
  const skip = typeof disk === "string" ? disk : undefined;
  if (skip) console.warn(`full-disk tests skipped: ${skip}`);
  afterAll(() => (disk as SmallDisk | string) && typeof disk !== "string" && disk.unmount());

  test.skipIf(skip !== undefined)(
    "fails the exchange and the callback, never the process; a restart on the full disk still shows the episode",
    async () => {
      const small = disk as SmallDisk;
      const running: SidecarProcess[] = [];
      try {
        const sidecar = await startHardenedSidecar(upstream, {}, { dataDir: small.dir });
        running.push(sidecar);
        upstream.reset();
        const episode = await sidecar.createEpisode();
        upstream.calls({ id: "call_obs", name: "ura_observe", arguments: "{}" });
        const calls = await deliveredCalls(await responsesTurn(episode));
        const client = await mcpClient(episode);
        small.fill();

        // A model exchange (larger than the slack of a file's last page): an error in the
        // client's envelope, nothing delivered.
        upstream.calls({ id: "call_rec", name: "ura_record", arguments: '{"nonce":"n"}' });
        const refused = await responsesTurn(episode, {}, { prompt: "look ".repeat(4096) });
        expect(refused.status).toBe(503);
        const envelope = (await refused.json()) as { error?: { message?: string } };
        expect(envelope.error?.message).toMatch(/could not write this exchange's records \(ENOSPC\)/);
        // Callbacks: a refused one whose journal line (it quotes the arguments) the disk cannot
        // take, then the call delivered before the disk filled. Both are MCP tool errors, and
        // the ledger, unable to journal, admits nothing: the robot is untouched.
        const bogus = await callBack(client, "record", { nonce: "z".repeat(16 * 1024) });
        expect(bogus.isError).toBe(true);
        const result = await callBack(client, "observe", {}, calls[0]?.call_id);
        expect(result.isError).toBe(true);
        expect(textOf(result)).toMatch(/journal failed.*ENOSPC/);
        expect(ledgerOf(episode).filter((e) => e.type === "claimed")).toEqual([]);
        await Bun.sleep(600); // past the deferred episode.json rewrite
        expect(sidecar.proc.exitCode).toBeNull();
        expect(await alive(sidecar.url)).toBe(true);
        const status = (await sidecar.episode(episode.id)) as unknown as Record<string, unknown>;
        expect(String(status.records_failure)).toMatch(/ENOSPC/);
        await client.close();
        await sidecar.stop("SIGKILL");

        // Restarted while the disk is still full: the episode is there (read-only), not a 404.
        const restarted = await startHardenedSidecar(upstream, {}, { dataDir: small.dir });
        running.push(restarted);
        const again = await restarted.control(`/episodes/${episode.id}`);
        expect(again.status).toBe(200);
        expect(((await again.json()) as { state: string }).state).toBe("interrupted");
        expect(await alive(restarted.url)).toBe(true);
      } finally {
        for (const sidecar of running) await sidecar.stop("SIGKILL");
        small.drain();
      }
    },
  );

  test.skipIf(skip !== undefined)(
    "a line the disk cannot take whole is never counted as written: nothing delivered, whole lines only",
    async () => {
      const small = disk as SmallDisk;
      small.drain();
      const sidecar = await startHardenedSidecar(upstream, {}, { dataDir: small.dir });
      try {
        const episode = await sidecar.createEpisode();
        const nonce = "x".repeat(64 * 1024);
        upstream.reset();
        upstream.reply({
          kind: "slow",
          ms: 800,
          reply: {
            kind: "calls",
            calls: [{ id: "call_big", name: "ura_record", arguments: JSON.stringify({ nonce }) }],
          },
        });
        const answer = responsesTurn(episode);
        await Bun.sleep(300); // the request is recorded and waiting upstream: now leave two pages free
        small.fill(8192);
        const res = await answer;
        const text = await res.text();
        expect(res.status).not.toBe(200);
        expect(text).not.toContain("function_call");
        const client = await mcpClient(episode);
        const result = await callBack(client, "record", { nonce }, "call_big");
        expect(result.isError).toBe(true);
        await client.close();
        for (const file of ["ledger.jsonl", "exchanges.jsonl"]) {
          expect(readJsonLines(join(episode.records_dir, file)).tornTail).toBeUndefined();
        }
        expect(ledgerOf(episode).filter((e) => e.type === "claimed" || e.type === "submitted")).toEqual([]);
        expect(sidecar.proc.exitCode).toBeNull();
      } finally {
        await sidecar.stop("SIGKILL");
        small.drain();
      }
    },
  );
});

describe("power cut and kill -9", () => {
  test("what the model answered is on disk before the answer is delivered (kill -9 mid-delivery)", async () => {
    const sidecar = await startHardenedSidecar(upstream);
    const episode = await sidecar.createEpisode();
    upstream.reset();
    upstream.reply({ kind: "text", text: "y".repeat(24 * 1024 * 1024) });
    const client = await stallAfterFirstBytes(episode);
    expect(client.first).toStartWith("HTTP/1.1 200");
    await sidecar.stop("SIGKILL");
    client.close();
    const stages = exchangesOf(episode).map((l) => l.stage);
    expect(stages).toContain("upstream_response");
  });
});

describe("one sidecar per data directory", () => {
  test("a second sidecar on the same directory is refused, and the first's episode is untouched", async () => {
    const first = await startHardenedSidecar(upstream);
    const episode = await first.createEpisode();
    let second: Awaited<ReturnType<typeof startSidecarProcess>> | undefined;
    let refusal = "";
    try {
      second = await startSidecarProcess({ dataDir: first.dataDir });
    } catch (error) {
      refusal = (error as Error).message;
    }
    await second?.stop("SIGKILL");
    expect(refusal).toMatch(/exit 2/);
    expect(refusal).toMatch(/in use by another ura-sidecar \(pid \d+/);
    expect(readdirSync(episode.records_dir).filter((f) => f.startsWith("restart-"))).toEqual([]);
    expect((await first.episode(episode.id)).state).toBe("running");
    await first.stopCleanly();
    // The lock goes with the process: the directory is free again.
    const next = await startSidecarProcess({ dataDir: first.dataDir });
    expect(existsSync(join(episode.records_dir, "frozen.json"))).toBe(true);
    expect(readFileSync(join(first.dataDir, "lock"), "utf8")).toContain(`pid ${next.proc.pid}`);
    await next.stopCleanly();
  });
});
