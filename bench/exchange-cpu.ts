/**
 * Exchange CPU bench: the sidecar's own CPU time per exchange for real recorded
 * client requests (Claude Code's 77 KB Messages request, Gemini CLI's first turn,
 * OpenCode's agent turn, each as its client sent it: compact JSON, SSE), against the CPU the
 * pass-through floor spends forwarding the Chat request that request becomes (the
 * fixture's upstream-request.json), in the same run on the same instant upstream
 * answering text. CPU is the on-CPU time of every thread of the process
 * (/proc/<pid>/task/<tid>/schedstat, nanoseconds) over a run of exchanges, so
 * everything counts: parsing, translation, records, fdatasync calls, the upstream
 * fetch, delivery, GC, the JIT compiler.
 * Measured from /health/ready on (before it the image workers' codec warm-up runs,
 * which is start-up, not exchange work) in two windows: the first exchanges, while
 * the engine still compiles the code they run (its JIT thread alone costs ~0.3–0.5 ms
 * per exchange over the first few hundred), and the steady state after `warmUp`
 * exchanges, which is what the exchanges of a long episode cost.
 * To profile: set URA_BINARY to a script that runs
 * `bun --cpu-prof --cpu-prof-dir=DIR src/main.ts "$@"` and run `bun bench/exchange-cpu.ts`.
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { temporaryDirectory } from "../test/support/exit-cleanup.ts";
import { type SidecarProcess, startSidecarProcess } from "../test/support/sidecar-process.ts";
import { type SpawnedServer, spawnInstantUpstream, spawnPassThroughFloor } from "./spawn-server.ts";

const root = resolve(import.meta.dir, "..");
const firstExchanges = 300;
const warmUp = 2000;
const steadyExchanges = 1000;

/**
 * On-CPU time of the live threads of a process, in ms (schedstat: ns; /proc/<pid>/stat counts
 * 10 ms ticks). A thread that ended takes its time with it: for windows short enough that the
 * process's threads stay the same; over a long loaded run use `processCpuMs`.
 */
export function cpuMs(pid: number): number {
  let ns = 0;
  for (const thread of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return ns / 1e6;
}

/** Clock ticks a second of /proc's utime and stime (USER_HZ: 100 on Linux, whatever the kernel's HZ). */
const userHz = 100;

/**
 * On-CPU time of a whole process in ms, threads that ended included (/proc/<pid>/stat
 * utime + stime, in 10 ms ticks): for a run long enough that a tick does not matter. Under
 * load a sidecar's threads come and go (the file system's thread pool), and the sum of its
 * live threads' time (`cpuMs`) can even shrink over a run.
 */
export function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / userHz;
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
    url: (u) => `${u.gemini}/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse`,
    auth: (key) => ({ "x-goog-api-key": key }),
  },
  {
    name: "opencode_responses_sse",
    fixture: "responses/opencode-agent-turn",
    url: (u) => `${u.responses}/responses`,
    auth: (key) => ({ authorization: `Bearer ${key}` }),
  },
];

async function cpuOf(pid: number, count: number, send: () => Promise<void>): Promise<number> {
  const before = cpuMs(pid);
  for (let i = 0; i < count; i++) await send();
  return (cpuMs(pid) - before) / count;
}

/** CPU per exchange over the first exchanges, then in the steady state. */
async function cpuPerExchange(pid: number, send: () => Promise<void>) {
  const first = await cpuOf(pid, firstExchanges, send);
  for (let i = firstExchanges; i < warmUp; i++) await send();
  return { first, steady: await cpuOf(pid, steadyExchanges, send) };
}

export async function untilReady(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while ((await fetch(`${url}/health/ready`).catch(() => undefined))?.status !== 200) {
    if (Date.now() > deadline) throw new Error(`${url}/health/ready did not answer 200 within 60 s`);
    await Bun.sleep(20);
  }
}

/** POSTs a JSON body and reads the whole answer; anything but a 200 is an error naming the URL. */
export async function post(url: string, headers: Record<string, string>, body: string): Promise<void> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${text.slice(0, 300)}`);
}

/** The instant text upstream, the pass-through floor before it and the sidecar on it, ready. */
export interface CpuBenchRig {
  upstream: SpawnedServer;
  floor: SpawnedServer;
  sidecar: SidecarProcess;
  stop(): Promise<void>;
}

/**
 * Starts the rig the CPU benches measure on; its data directory is a new one named by
 * `prefix`, removed by `stop` once the sidecar has exited.
 */
export async function startCpuBenchRig(prefix: string): Promise<CpuBenchRig> {
  const upstream = await spawnInstantUpstream("--text");
  const floor = await spawnPassThroughFloor(upstream.url);
  const dataDir = temporaryDirectory(prefix);
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    dataDir,
    args: ["--log-level", "warn"],
  }).catch((error: unknown) => {
    floor.proc.kill();
    upstream.proc.kill();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  });
  const stop = async () => {
    await sidecar.stopAndRemove();
    floor.proc.kill();
    upstream.proc.kill();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await untilReady(sidecar.url);
  } catch (error) {
    await stop();
    throw error;
  }
  return { upstream, floor, sidecar, stop };
}

export async function runExchangeCpuBench(
  log: (line: string) => void = console.log,
): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  const rig = await startCpuBenchRig("ura-bench-cpu-");
  const { floor, sidecar } = rig;
  try {
    log(
      `CPU ms per exchange, all threads; first ${firstExchanges} exchanges after ready (JIT still compiling), and steady state (exchanges ${warmUp}–${warmUp + steadyExchanges}); the floor measured the same way.`,
    );
    log(
      "| request (as recorded, SSE) | bytes | floor: first / steady | sidecar: first / steady | ratio, steady |",
    );
    log("|---|---|---|---|---|");
    for (const c of cases) {
      const dir = join(root, "fixtures", c.fixture);
      // The fixture is pretty-printed for review; the client sent it compact (its recorded
      // content-length is the compact text's), and only single-line JSON is recorded as
      // JSON whose long strings the records store once.
      const clientBody = JSON.stringify(JSON.parse(readFileSync(join(dir, "client-request.json"), "utf8")));
      const chatBody = readFileSync(join(dir, "upstream-request.json"), "utf8");
      const episode = await sidecar.createEpisode({ max_turns: 0, model: "qwen3-vl-plus" });
      const floorMs = await cpuPerExchange(floor.proc.pid, () =>
        post(`${floor.url}/chat/completions`, {}, chatBody),
      );
      const sidecarMs = await cpuPerExchange(sidecar.proc.pid, () =>
        post(c.url(episode.urls), c.auth(episode.ingress_key), clientBody),
      );
      const ratio = sidecarMs.steady / Math.max(floorMs.steady, 0.001);
      figures[`${c.name}_floor_cpu_ms_per_exchange`] = floorMs.steady;
      figures[`${c.name}_cpu_ms_per_exchange`] = sidecarMs.steady;
      figures[`${c.name}_floor_first_cpu_ms_per_exchange`] = floorMs.first;
      figures[`${c.name}_first_cpu_ms_per_exchange`] = sidecarMs.first;
      figures[`${c.name}_cpu_vs_floor_ratio`] = ratio;
      const pair = ({ first, steady }: { first: number; steady: number }) =>
        `${first.toFixed(3)} / ${steady.toFixed(3)}`;
      log(
        `| ${c.name} | ${Buffer.byteLength(clientBody)} | ${pair(floorMs)} | ${pair(sidecarMs)} | ${ratio.toFixed(2)} |`,
      );
    }
  } finally {
    await rig.stop();
  }
  return figures;
}

if (import.meta.main) await runExchangeCpuBench();
