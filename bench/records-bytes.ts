/**
 * Records bench: bytes written per exchange for real recorded client requests sent
 * the way their clients send them (compact JSON, the same request on every turn, as
 * an agent CLI resends its system prompt, tools and history), against the request's
 * own size in the same run. The first turn of a fresh data directory and the median
 * of the later ones (long strings the records already hold are references from then
 * on, docs/records.md), the exchange lines (exchanges.jsonl) and the blobs added.
 *   bun bench/records-bytes.ts
 */
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { temporaryDirectory } from "../test/support/exit-cleanup.ts";
import { startSidecarProcess } from "../test/support/sidecar-process.ts";
import { spawnInstantUpstream } from "./spawn-server.ts";

const root = resolve(import.meta.dir, "..");
const turns = 5;

const cases = [
  {
    name: "claude_messages",
    fixture: "messages/main-turn",
    url: (u: { anthropic: string }) => `${u.anthropic}/v1/messages?beta=true`,
    auth: (key: string) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
  },
  {
    name: "gemini",
    fixture: "gemini/first-turn",
    url: (u: { gemini: string }) => `${u.gemini}/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse`,
    auth: (key: string) => ({ "x-goog-api-key": key }),
  },
  {
    name: "opencode_responses",
    fixture: "responses/opencode-agent-turn",
    url: (u: { responses: string }) => `${u.responses}/responses`,
    auth: (key: string) => ({ authorization: `Bearer ${key}` }),
  },
];

function directoryBytes(dir: string): number {
  try {
    return readdirSync(dir).reduce((n, name) => n + statSync(join(dir, name)).size, 0);
  } catch {
    return 0;
  }
}

/** Bytes of exchanges.jsonl per exchange id, in the order written. */
function bytesPerExchange(recordsDir: string): number[] {
  const perExchange = new Map<string, number>();
  for (const line of readFileSync(join(recordsDir, "exchanges.jsonl"), "utf8").split("\n")) {
    if (line === "") continue;
    const id = (JSON.parse(line) as { exchange: string }).exchange;
    perExchange.set(id, (perExchange.get(id) ?? 0) + Buffer.byteLength(line) + 1);
  }
  return [...perExchange.values()];
}

export async function runRecordsBytesBench(
  log: (line: string) => void = console.log,
): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  const upstream = await spawnInstantUpstream("--text");
  const dataDir = temporaryDirectory("ura-bench-records-");
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    dataDir,
    args: ["--log-level", "warn"],
  });
  const blobsDir = join(dataDir, "blobs", "sha256");
  try {
    log(
      `| request (compact, ${turns} turns, one episode each) | request bytes | records bytes, first turn | later turns (median) | later ÷ request | blob bytes added |`,
    );
    log("|---|---|---|---|---|---|");
    for (const c of cases) {
      const body = JSON.stringify(
        JSON.parse(readFileSync(join(root, "fixtures", c.fixture, "client-request.json"), "utf8")),
      );
      const episode = await sidecar.createEpisode({ max_turns: 0, model: "qwen3-vl-plus" });
      const blobsBefore = directoryBytes(blobsDir);
      for (let turn = 0; turn < turns; turn++) {
        const res = await fetch(c.url(episode.urls), {
          method: "POST",
          headers: { "content-type": "application/json", ...c.auth(episode.ingress_key) },
          body,
        });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`${c.name}: HTTP ${res.status} ${text.slice(0, 300)}`);
      }
      await Bun.sleep(200); // the last status line is written once the delivery settled
      const perExchange = bytesPerExchange(episode.records_dir);
      const later = perExchange.slice(1).sort((a, b) => a - b);
      const laterMedian = later[Math.floor(later.length / 2)] ?? Number.NaN;
      const requestBytes = Buffer.byteLength(body);
      figures[`records_${c.name}_request_bytes`] = requestBytes;
      figures[`records_${c.name}_first_turn_bytes`] = perExchange[0] ?? Number.NaN;
      figures[`records_${c.name}_later_turn_bytes`] = laterMedian;
      figures[`records_${c.name}_later_vs_request_ratio`] = laterMedian / requestBytes;
      figures[`records_${c.name}_blob_bytes`] = directoryBytes(blobsDir) - blobsBefore;
      log(
        `| ${c.name} | ${requestBytes} | ${perExchange[0]} | ${laterMedian} | ${(laterMedian / requestBytes).toFixed(2)} | ${figures[`records_${c.name}_blob_bytes`]} |`,
      );
    }
  } finally {
    await sidecar.stopAndRemove();
    upstream.proc.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return figures;
}

if (import.meta.main) await runRecordsBytesBench();
