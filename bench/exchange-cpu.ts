/**
 * Exchange CPU bench: the sidecar's own CPU time per exchange for real recorded
 * client requests (Claude Code's 77 KB Messages request, Gemini CLI's first turn,
 * OpenCode's agent turn, each as its client sent it: compact JSON, SSE), against the CPU the
 * pass-through floor spends forwarding the Chat request that request becomes (the
 * fixture's upstream-request.json), in the same run on the same instant upstream
 * answering text. CPU is the process's user + system time (/proc/<pid>/stat) over a
 * run of exchanges, so everything counts: parsing, translation, records, fdatasync
 * calls, the upstream fetch, delivery, GC.
 * To profile: set URA_BINARY to a script that runs
 * `bun --cpu-prof --cpu-prof-dir=DIR src/main.ts "$@"` and run `bun bench/exchange-cpu.ts`.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startSidecarProcess } from "../test/support/sidecar-process.ts";
import { spawnInstantUpstream, spawnPassThroughFloor } from "./spawn-server.ts";

const root = resolve(import.meta.dir, "..");
const exchanges = 300;

/** utime + stime of a process, in ms (clock ticks are 100 Hz on Linux). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

type Case = {
  name: string;
  fixture: string;
  url: (urls: { responses: string; gemini: string; anthropic: string }) => string;
  auth: (key: string) => Record<string, string>;
};

const cases: Case[] = [
  {
    name: "claude_messages_sse",
    fixture: "messages/main-turn",
    url: (u) => `${u.anthropic}/v1/messages?beta=true`,
    auth: (key) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
  },
  {
    name: "gemini_sse",
    fixture: "gemini/first-turn",
    url: (u) => `${u.gemini}/v1beta/models/ura-qwen:streamGenerateContent?alt=sse`,
    auth: (key) => ({ "x-goog-api-key": key }),
  },
  {
    name: "opencode_responses_sse",
    fixture: "responses/opencode-agent-turn",
    url: (u) => `${u.responses}/responses`,
    auth: (key) => ({ authorization: `Bearer ${key}` }),
  },
];

async function cpuPerExchange(pid: number, send: () => Promise<void>): Promise<number> {
  for (let i = 0; i < 30; i++) await send(); // warm-up: JIT, caches
  const before = cpuMs(pid);
  for (let i = 0; i < exchanges; i++) await send();
  return (cpuMs(pid) - before) / exchanges;
}

async function post(url: string, headers: Record<string, string>, body: string): Promise<void> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${text.slice(0, 300)}`);
}

export async function runExchangeCpuBench(
  log: (line: string) => void = console.log,
): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  const upstream = await spawnInstantUpstream("--text");
  const floor = await spawnPassThroughFloor(upstream.url);
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    dataDir: mkdtempSync(join(tmpdir(), "ura-bench-cpu-")),
    args: ["--log-level", "warn"],
  });
  try {
    log("| request (as recorded, SSE) | bytes | floor CPU ms/exchange | sidecar CPU ms/exchange | ratio |");
    log("|---|---|---|---|---|");
    for (const c of cases) {
      const dir = join(root, "fixtures", c.fixture);
      // The fixture is pretty-printed for review; the client sent it compact (its recorded
      // content-length is the compact text's), and only single-line JSON is recorded as
      // JSON whose long strings the records store once.
      const clientBody = JSON.stringify(JSON.parse(readFileSync(join(dir, "client-request.json"), "utf8")));
      const chatBody = readFileSync(join(dir, "upstream-request.json"), "utf8");
      const episode = await sidecar.createEpisode({ max_turns: 0, model: "ura-qwen" });
      const floorMs = await cpuPerExchange(floor.proc.pid, () =>
        post(`${floor.url}/chat/completions`, {}, chatBody),
      );
      const sidecarMs = await cpuPerExchange(sidecar.proc.pid, () =>
        post(c.url(episode.urls), c.auth(episode.ingress_key), clientBody),
      );
      figures[`${c.name}_floor_cpu_ms_per_exchange`] = floorMs;
      figures[`${c.name}_cpu_ms_per_exchange`] = sidecarMs;
      figures[`${c.name}_cpu_vs_floor_ratio`] = sidecarMs / Math.max(floorMs, 0.001);
      log(
        `| ${c.name} | ${Buffer.byteLength(clientBody)} | ${floorMs.toFixed(3)} | ${sidecarMs.toFixed(3)} | ${(sidecarMs / Math.max(floorMs, 0.001)).toFixed(2)} |`,
      );
    }
  } finally {
    await sidecar.stop();
    floor.proc.kill();
    upstream.proc.kill();
  }
  return figures;
}

if (import.meta.main) await runExchangeCpuBench();
