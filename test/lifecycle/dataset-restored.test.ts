/**
 * The dataset export on a restored episode: two turns of the smoke episode
 * through the compiled binary (observe called back over MCP), kill -9 with a
 * torn line left at the end of exchanges.jsonl, a restart on the same data
 * directory (the episode comes back `interrupted`, restart-001.jsonl written),
 * then `export dataset`: skipped with its reason by default; with
 * --include-interrupted exported from the exchanges recorded whole — the line
 * ends on the model's last delivered answer (a call whose result never came),
 * the torn tail is noted, the episode marked restored. Needs `make build`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  callback,
  connectMcp,
  firstTurn,
  responsesRequest,
  resultText,
  startSidecar,
  startUpstream,
  type Upstream,
} from "../support/lifecycle-kit.ts";
import { binaryPath, controlPassword } from "../support/sidecar-process.ts";

let upstream: Upstream;
beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(() => upstream.stop());

async function exportDataset(dataDir: string, extra: string[]) {
  const out = join(mkdtempSync(join(tmpdir(), "ura-dataset-out-")), "dataset");
  const proc = Bun.spawn(
    [binaryPath, "export", "dataset", "--data-dir", dataDir, "--out", out, "--all", ...extra],
    {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", URA_CONTROL_PASSWORD: controlPassword },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  const lines = readFileSync(join(out, "dataset.jsonl"), "utf8").split("\n").filter(Boolean);
  return { code, stdout, lines, manifest: JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")) };
}

test("a restored (interrupted) episode: skipped with its reason, or exported from its whole exchanges when asked", async () => {
  const first = await startSidecar(upstream, {});
  const episode = await first.createEpisode({});
  const observe = await firstTurn(episode);
  const mcp = await connectMcp(episode.urls.mcp, episode.mcp_token).catch((error) => {
    console.error(first.output());
    throw error;
  });
  const observed = await callback(mcp, observe);
  await mcp.close();
  const frame = (observed.content as { type: string; data?: string; mimeType?: string }[]).find(
    (c) => c.type === "image",
  );
  expect(frame?.mimeType).toBe("image/png");
  const second = await responsesRequest(episode, [
    { role: "user", content: "go" },
    observe,
    {
      type: "function_call_output",
      call_id: observe.call_id,
      output: [
        { type: "input_text", text: resultText(observed) },
        { type: "input_image", image_url: `data:${frame?.mimeType};base64,${frame?.data}` },
      ],
    },
  ]);
  expect(second.status).toBe(200);
  const records = join(first.dataDir, "episodes", episode.id);
  first.proc.kill("SIGKILL");
  await first.proc.exited;
  appendFileSync(
    join(records, "exchanges.jsonl"),
    '{"at":"2026-12-01T10:00:00.000Z","exchange":"ex_0003","stage":"cli',
  );

  const restarted = await startSidecar(upstream, {}, first.dataDir);
  expect((await restarted.episode(episode.id)).state).toBe("interrupted");
  await restarted.stopCleanly();
  expect(existsSync(join(records, "restart-001.jsonl"))).toBe(true);

  const byDefault = await exportDataset(first.dataDir, []);
  expect(byDefault.code).toBe(0);
  expect(byDefault.lines).toEqual([]);
  expect(byDefault.manifest.skipped).toEqual([
    expect.objectContaining({ episode: episode.id, kind: "interrupted" }),
  ]);

  const asked = await exportDataset(first.dataDir, ["--include-interrupted"]);
  expect(asked.code).toBe(0);
  expect(asked.lines).toHaveLength(1);
  const line = JSON.parse(asked.lines[0] ?? "{}") as {
    messages: { role: string; tool_calls?: { id: string; function: { name: string } }[] }[];
  };
  // Turn 1 (observe) with its result and image, then turn 2's answer: the two record calls, never called back.
  expect(line.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user", "assistant"]);
  expect(line.messages[1]?.tool_calls?.[0]?.id).toBe(observe.call_id);
  expect(line.messages.at(-1)?.tool_calls?.map((c) => c.function.name)).toEqual(["ura_record", "ura_record"]);
  const [entry] = asked.manifest.episodes;
  // Its last known state, as `records list` gives it: restoring it made it interrupted (episode.json still says running).
  expect(entry).toMatchObject({
    id: episode.id,
    state: "interrupted",
    restored: true,
    successful_finish: false,
  });
  expect(entry.notes.join()).toContain("exchanges.jsonl ends in a torn line");
  expect(entry.conversations[0].exchanges).toEqual(["ex_0001", "ex_0002"]);
  expect(asked.manifest.counts.images).toBe(1);
}, 60_000);
