/**
 * Gateway bench: what the compiled sidecar adds to an exchange, against baselines
 * measured in the same run on the same instant upstream (instant-chat-upstream.ts):
 *   direct  — the bench client calls the upstream itself
 *   floor   — a minimal pass-through proxy (a few lines of Bun) in between
 *   Portkey — the Portkey AI gateway passing Chat Completions through (it forwards
 *             /v1/responses untranslated, so the peer comparison is on Chat requests)
 *   sidecar — dist/ura-sidecar (Responses ingress translated to Chat, records on and
 *             durable: an fdatasync before each answer is delivered) in between
 *   sidecar without fsync — the same with records.fsync false (records survive kill -9,
 *             not a power cut): what the sidecar adds besides waiting for the disk
 *   one episode per client (c=16 only) — the durable sidecar with each concurrent client
 *             in its own episode, as 16 robots would be, rather than 16 exchanges of one
 * For a text-only 20-turn request and a tool-call response, JSON and SSE, at concurrency 1 and 16:
 * added p50/p99 latency (sidecar − direct) and throughput; at c=1 also the tail with the
 * targets taking turns request by request, so the shared machine's preemption falls on all
 * alike and the floor's own p99/p50 says how much of a tail is the machine's. Also cold start (exec to the
 * socket answering, and to /health/ready with the codecs warm) for the Makefile's build
 * and for the same sources built the other way (with or without `--bytecode`), and memory
 * (RSS after start-up and warm-up, after the load, and with 50 episodes each holding a
 * 30-image history).
 * All servers listen on 127.0.0.1 only; every loop is bounded.
 * `bun bench/gateway.ts text20_json_c16 …` runs only the named cases (no memory, no cold start).
 */
import { readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { rgbNoisePng } from "../src/images/generate-png.ts";
import { killAtExit, temporaryDirectory } from "../test/support/exit-cleanup.ts";
import { binaryPath, startSidecarProcess } from "../test/support/sidecar-process.ts";
import { spawnInstantUpstream, spawnPassThroughFloor, untilAnswers } from "./spawn-server.ts";

const root = resolve(import.meta.dir, "..");

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

type Target = {
  name: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Each concurrent client its own URL and headers (an episode each), instead of all sharing `url`. */
  perClient?: { url: string; headers: Record<string, string> }[];
};

/** One request's round trip in ms, the answer read whole. */
async function timedRequest(
  target: Target,
  { url, headers }: { url: string; headers: Record<string, string> } = target,
): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, { method: "POST", headers, body: target.body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${target.name}: HTTP ${res.status} ${text.slice(0, 200)}`);
  return performance.now() - t0;
}

async function load(target: Target, concurrency: number, total: number) {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      const endpoint = target.perClient?.[client % target.perClient.length] ?? target;
      while (next < total) {
        next += 1;
        latencies.push(await timedRequest(target, endpoint));
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), rps: total / seconds };
}

function textTurns(turns: number) {
  const chat: { role: string; content: string }[] = [
    { role: "system", content: "You are a helpful robot assistant." },
  ];
  for (let i = 0; i < turns; i++) {
    chat.push({ role: "user", content: `Turn ${i}: describe what the arm should do next, briefly.` });
    chat.push({
      role: "assistant",
      content: `Step ${i}: move the gripper ${i} cm to the left and re-check the block.`,
    });
  }
  chat.push({ role: "user", content: "Summarise." });
  return chat;
}

const robotTools = ["observe", "record", "finish"].map((name) => ({
  type: "function",
  name: `ura_${name}`,
  description: name,
  parameters: { type: "object", properties: {} },
  strict: false,
}));

type Round = { p50: number; p99: number; rps: number };

/**
 * c=1 with the targets taking turns request by request (the order rotating), so a
 * preemption or a writeback burst on the shared machine falls on every target alike,
 * and `requests` each gives every p99 its 1% of samples (15 at 1500).
 */
async function interleaved(targets: Target[], requests: number): Promise<Record<string, Round>> {
  const latencies = new Map<string, number[]>(targets.map((t) => [t.name, []]));
  for (let i = 0; i < requests; i++) {
    for (let k = 0; k < targets.length; k++) {
      const target = targets[(i + k) % targets.length] as Target;
      latencies.get(target.name)?.push(await timedRequest(target));
    }
  }
  return Object.fromEntries(
    Array.from(latencies, ([name, xs]) => {
      xs.sort((a, b) => a - b);
      return [name, { p50: percentile(xs, 50), p99: percentile(xs, 99), rps: Number.NaN }];
    }),
  );
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** Starts the Portkey AI gateway (npm @portkey-ai/gateway) under bun: its streaming fails under node. */
async function startPortkey(): Promise<{ url: string; proc: ReturnType<typeof Bun.spawn> }> {
  // Below the kernel's ephemeral range (32768+), where outgoing connections and port-0 listeners land.
  const port = 20000 + Math.floor(Math.random() * 12000);
  const proc = Bun.spawn(
    [
      "node_modules/.bin/bun",
      "node_modules/@portkey-ai/gateway/build/start-server.js",
      `--port=${port}`,
      "--headless",
    ],
    { cwd: root, stdout: "ignore", stderr: "ignore" },
  );
  killAtExit(proc);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (
      await fetch(`${url}/`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, proc };
    await Bun.sleep(50);
  }
  proc.kill();
  throw new Error("the Portkey gateway did not start within 20 s");
}

/** Every case the bench runs: answer kind × JSON or SSE × concurrency. */
const caseKeys = ["text20", "toolcall"].flatMap((kind) =>
  ["json", "sse"].flatMap((form) => [1, 16].map((c) => `${kind}_${form}_c${c}`)),
);

export async function runGatewayBench(
  log: (line: string) => void = console.log,
  /** Case keys to run (e.g. `text20_json_c16`); none = every case, then memory and cold start. */
  only: string[] = [],
): Promise<Record<string, number>> {
  const unknown = only.filter((name) => !caseKeys.includes(name));
  if (unknown.length > 0) throw new Error(`unknown case ${unknown.join(", ")}; cases: ${caseKeys.join(" ")}`);
  const figures: Record<string, number> = {};
  const upstream = await spawnInstantUpstream();
  const floor = await spawnPassThroughFloor(upstream.url);
  const portkey = await startPortkey();
  const dataDir = temporaryDirectory("ura-bench-");
  // The shared upstream budget (default 8 in flight) would queue the c=16 runs: this bench
  // measures the sidecar's own cost against gateways that have no queue, so it lets all 16 through.
  const unqueued = { upstream: { budget: { max_concurrent: 64 } } };
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    dataDir,
    config: unqueued,
    args: ["--log-level", "warn"],
  });
  const sidecarNoFsync = await startSidecarProcess({
    upstreamUrl: upstream.url,
    config: { ...unqueued, records: { fsync: false } },
    args: ["--log-level", "warn"],
  });
  try {
    const episode = await sidecar.createEpisode({});
    const episodeNoFsync = await sidecarNoFsync.createEpisode({});
    // At c=16 also one client per episode, as 16 robots each running its own agent would.
    const robots = await Promise.all(Array.from({ length: 16 }, () => sidecar.createEpisode({})));
    const turns = textTurns(20);
    const chatBody = (stream: boolean, tools: boolean) =>
      JSON.stringify({
        model: "qwen",
        messages: tools ? [{ role: "user", content: "observe" }] : turns,
        ...(tools
          ? {
              tools: robotTools.map((t) => ({
                type: "function",
                function: { name: t.name, description: t.description, parameters: t.parameters },
              })),
            }
          : {}),
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {}),
        enable_thinking: false,
      });
    const responsesBody = (stream: boolean, tools: boolean) =>
      JSON.stringify({
        model: "qwen",
        stream,
        store: false,
        input: tools
          ? [{ role: "user", content: "observe" }]
          : turns.map((m) => ({ role: m.role, content: m.content })),
        ...(tools ? { tools: robotTools } : {}),
      });
    const json = { "content-type": "application/json" };
    const sidecarHeaders = { ...json, authorization: `Bearer ${episode.ingress_key}` };
    const noFsyncHeaders = { ...json, authorization: `Bearer ${episodeNoFsync.ingress_key}` };
    // Portkey's OpenAI provider passes Chat Completions through to a custom host (127.0.0.1 is trusted).
    const portkeyHeaders = {
      ...json,
      authorization: "Bearer sk-bench",
      "x-portkey-provider": "openai",
      "x-portkey-custom-host": upstream.url,
    };
    log(
      "Sidecar: Responses in, Chat Completions upstream, records on (durable: an fdatasync before each answer; and with records.fsync false). Floor and Portkey: Chat Completions passed through, nothing recorded, no disk wait: compare them with the no-fsync column for the work alone.",
    );
    log(
      "| case | conc | direct p50 | added p50: floor / Portkey / sidecar / sidecar no fsync | sidecar added p99 | rps: floor / Portkey / sidecar / no fsync | rps, sidecar, one episode per client |",
    );
    log("|---|---|---|---|---|---|---|");
    const worst = {
      vsFloor: 0,
      noFsyncVsFloor: 0,
      vsPortkey: 0,
      tail: 0,
      rpsVsFloor: Number.POSITIVE_INFINITY,
      noFsyncRpsVsFloor: Number.POSITIVE_INFINITY,
      episodesRpsVsFloor: Number.POSITIVE_INFINITY,
      rpsVsPortkey: Number.POSITIVE_INFINITY,
    };
    const worstTail = { sidecar: 0, nofsync: 0, floor: 0, portkey: 0 };
    const worstInterleaved = { sidecar: 0, nofsync: 0, floor: 0, portkey: 0 };
    for (const tools of [false, true]) {
      for (const stream of [false, true]) {
        for (const concurrency of [1, 16]) {
          const name = `${tools ? "toolcall" : "text20"}_${stream ? "sse" : "json"}`;
          if (only.length > 0 && !only.includes(`${name}_c${concurrency}`)) continue;
          const total = concurrency === 1 ? 900 : 2400;
          const chat = chatBody(stream, tools);
          const targets: Target[] = [
            { name: "direct", url: `${upstream.url}/chat/completions`, headers: json, body: chat },
            { name: "floor", url: `${floor.url}/chat/completions`, headers: json, body: chat },
            {
              name: "portkey",
              url: `${portkey.url}/v1/chat/completions`,
              headers: portkeyHeaders,
              body: chat,
            },
            {
              name: "sidecar",
              url: `${episode.urls.responses}/responses`,
              headers: sidecarHeaders,
              body: responsesBody(stream, tools),
            },
            {
              name: "nofsync",
              url: `${episodeNoFsync.urls.responses}/responses`,
              headers: noFsyncHeaders,
              body: responsesBody(stream, tools),
            },
            ...(concurrency > 1
              ? [
                  {
                    name: "episodes",
                    url: "",
                    headers: {},
                    body: responsesBody(stream, tools),
                    perClient: robots.map((e) => ({
                      url: `${e.urls.responses}/responses`,
                      headers: { ...json, authorization: `Bearer ${e.ingress_key}` },
                    })),
                  },
                ]
              : []),
          ];
          for (const t of targets) await load(t, concurrency, 50); // warm-up
          // Interleave rounds so drift on a shared machine hits every target alike.
          const rounds: Record<string, Round[]> = {};
          for (let round = 0; round < 3; round++) {
            for (const t of targets) {
              const r = await load(t, concurrency, Math.floor(total / 3));
              rounds[t.name] = [...(rounds[t.name] ?? []), r];
            }
          }
          const at = (target: string, field: keyof Round) =>
            median((rounds[target] ?? []).map((r) => r[field]));
          const direct = at("direct", "p50");
          const added = (target: string) => at(target, "p50") - direct;
          const key = `${name}_c${concurrency}`;
          figures[`${key}_direct_p50_ms`] = direct;
          figures[`${key}_floor_added_p50_ms`] = added("floor");
          figures[`${key}_portkey_added_p50_ms`] = added("portkey");
          figures[`${key}_added_p50_ms`] = added("sidecar");
          figures[`${key}_added_p99_ms`] = at("sidecar", "p99") - at("direct", "p99");
          figures[`${key}_floor_rps`] = at("floor", "rps");
          figures[`${key}_portkey_rps`] = at("portkey", "rps");
          figures[`${key}_sidecar_rps`] = at("sidecar", "rps");
          figures[`${key}_nofsync_added_p50_ms`] = added("nofsync");
          figures[`${key}_nofsync_rps`] = at("nofsync", "rps");
          // An added latency under 10 µs is measurement noise: floor the divisor there.
          const ratio = (a: number, b: number) => a / Math.max(b, 0.01);
          figures[`${key}_added_vs_floor_ratio`] = ratio(added("sidecar"), added("floor"));
          figures[`${key}_added_vs_portkey_ratio`] = ratio(added("sidecar"), added("portkey"));
          figures[`${key}_nofsync_added_vs_floor_ratio`] = ratio(added("nofsync"), added("floor"));
          if (concurrency === 1) {
            worst.vsFloor = Math.max(worst.vsFloor, figures[`${key}_added_vs_floor_ratio`] ?? 0);
            worst.noFsyncVsFloor = Math.max(
              worst.noFsyncVsFloor,
              figures[`${key}_nofsync_added_vs_floor_ratio`] ?? 0,
            );
            // Steady tail: each round's added p99 against its added p50, for the baselines too:
            // on a shared machine their tails show what preemption alone does in the same rounds.
            const directRounds = rounds.direct ?? [];
            const tails = (target: string) =>
              (rounds[target] ?? []).map((r, i) => {
                const d = directRounds[i] as Round;
                return ratio(r.p99 - d.p99, r.p50 - d.p50);
              });
            for (const target of ["sidecar", "nofsync", "floor", "portkey"] as const) {
              worstTail[target] = Math.max(worstTail[target], ...tails(target));
            }
            worst.tail = worstTail.sidecar;
            // The same targets taking turns request by request (Portkey only on JSON: its SSE
            // adds a fixed ~26 ms per stream), 1500 requests each.
            const turnTaking = await interleaved(
              targets.filter((t) => !(stream && t.name === "portkey")),
              1500,
            );
            const turnDirect = turnTaking.direct as Round;
            const interleavedTails: string[] = [];
            for (const target of ["sidecar", "nofsync", "floor", "portkey"] as const) {
              const r = turnTaking[target];
              if (!r) continue;
              const tail = ratio(r.p99 - turnDirect.p99, r.p50 - turnDirect.p50);
              figures[`${key}_interleaved_${target}_added_p50_ms`] = r.p50 - turnDirect.p50;
              figures[`${key}_interleaved_${target}_added_p99_ms`] = r.p99 - turnDirect.p99;
              figures[`${key}_interleaved_${target}_p99_vs_p50_added`] = tail;
              worstInterleaved[target] = Math.max(worstInterleaved[target], tail);
              interleavedTails.push(
                `${target} ${(r.p50 - turnDirect.p50).toFixed(3)} / ${(r.p99 - turnDirect.p99).toFixed(3)} ms = ${tail.toFixed(1)}`,
              );
            }
            log(`  ${name} c=1 taking turns, added p50 / p99: ${interleavedTails.join("; ")}`);
            log(
              `  ${name} c=1 added p99/p50 per round: sidecar ${tails("sidecar")
                .map((x) => x.toFixed(1))
                .join(", ")}; no fsync ${tails("nofsync")
                .map((x) => x.toFixed(1))
                .join(", ")}; floor ${tails("floor")
                .map((x) => x.toFixed(1))
                .join(", ")}; Portkey ${tails("portkey")
                .map((x) => x.toFixed(1))
                .join(", ")}`,
            );
          } else {
            figures[`${key}_episodes_rps`] = at("episodes", "rps");
            worst.rpsVsFloor = Math.min(worst.rpsVsFloor, at("sidecar", "rps") / at("floor", "rps"));
            worst.noFsyncRpsVsFloor = Math.min(
              worst.noFsyncRpsVsFloor,
              at("nofsync", "rps") / at("floor", "rps"),
            );
            worst.episodesRpsVsFloor = Math.min(
              worst.episodesRpsVsFloor,
              at("episodes", "rps") / at("floor", "rps"),
            );
          }
          worst.vsPortkey = Math.max(worst.vsPortkey, figures[`${key}_added_vs_portkey_ratio`] ?? 0);
          worst.rpsVsPortkey = Math.min(worst.rpsVsPortkey, at("sidecar", "rps") / at("portkey", "rps"));
          const f = (x: number | undefined) => (x ?? Number.NaN).toFixed(3);
          log(
            `| ${name} | ${concurrency} | ${f(direct)} | ${f(added("floor"))} / ${f(added("portkey"))} / ${f(added("sidecar"))} / ${f(added("nofsync"))} | ${f(figures[`${key}_added_p99_ms`])} | ${at("floor", "rps").toFixed(0)} / ${at("portkey", "rps").toFixed(0)} / ${at("sidecar", "rps").toFixed(0)} / ${at("nofsync", "rps").toFixed(0)} | ${concurrency > 1 ? at("episodes", "rps").toFixed(0) : "–"} |`,
          );
        }
      }
    }
    figures.added_p50_ms = figures.text20_json_c1_added_p50_ms ?? Number.NaN;
    figures.added_vs_floor_ratio = worst.vsFloor;
    figures.nofsync_added_vs_floor_ratio = worst.noFsyncVsFloor;
    figures.added_vs_portkey_ratio = worst.vsPortkey;
    figures.p99_vs_p50_added_ratio = worst.tail;
    figures.nofsync_p99_vs_p50_added_ratio = worstTail.nofsync;
    figures.floor_p99_vs_p50_added_ratio = worstTail.floor;
    figures.portkey_p99_vs_p50_added_ratio = worstTail.portkey;
    figures.interleaved_p99_vs_p50_added_ratio = worstInterleaved.sidecar;
    figures.interleaved_nofsync_p99_vs_p50_added_ratio = worstInterleaved.nofsync;
    figures.interleaved_floor_p99_vs_p50_added_ratio = worstInterleaved.floor;
    figures.interleaved_portkey_p99_vs_p50_added_ratio = worstInterleaved.portkey;
    figures.rps_c16_vs_floor_ratio = worst.rpsVsFloor;
    figures.nofsync_rps_c16_vs_floor_ratio = worst.noFsyncRpsVsFloor;
    figures.episodes_rps_c16_vs_floor_ratio = worst.episodesRpsVsFloor;
    figures.rps_vs_portkey_ratio = worst.rpsVsPortkey;
    log(
      `worst case: added p50 ${worst.vsFloor.toFixed(2)}× the floor at c=1 (goal ≤ 2; ${worst.noFsyncVsFloor.toFixed(2)}× without fsync); ${worst.vsPortkey.toFixed(2)}× Portkey's (goal < 1); added p99 ${worst.tail.toFixed(2)}× added p50 in the worst round (goal ≤ 3; same rounds: no fsync ${worstTail.nofsync.toFixed(2)}×, floor ${worstTail.floor.toFixed(2)}×, Portkey ${worstTail.portkey.toFixed(2)}×; taking turns request by request: ${worstInterleaved.sidecar.toFixed(2)}×, no fsync ${worstInterleaved.nofsync.toFixed(2)}×, floor ${worstInterleaved.floor.toFixed(2)}×, Portkey JSON ${worstInterleaved.portkey.toFixed(2)}×); ${Number.isFinite(worst.rpsVsFloor) ? `rps at c=16 ${(worst.rpsVsFloor * 100).toFixed(0)}% of the floor's (goal ≥ 50%; ${(worst.noFsyncRpsVsFloor * 100).toFixed(0)}% without fsync, ${(worst.episodesRpsVsFloor * 100).toFixed(0)}% with one episode per client)` : "rps at c=16 not measured (no c=16 case run)"}; rps ${worst.rpsVsPortkey.toFixed(2)}× Portkey's (goal > 1)`,
    );

    if (only.length > 0) return figures;
    // Memory: idle, then 50 episodes each holding a 30-image history.
    const rss = () =>
      Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${sidecar.proc.pid}/status`, "utf8"))?.[1] ?? 0) /
      1024;
    // Idle after the load above (start-up, warm-up, every case's rounds): the goal's figure,
    // read once the sidecar has been idle long enough to collect what the load left (src/body/reclaim-memory.ts).
    await Bun.sleep(3_000);
    figures.rss_idle_mb = rss();
    const frame = Buffer.from(rgbNoisePng(320, 240, 11).png).toString("base64");
    const history: unknown[] = [{ role: "user", content: "look 30 times" }];
    for (let i = 0; i < 30; i++) {
      history.push({ type: "function_call", call_id: `h_${i}`, name: "ura_observe", arguments: "{}" });
      history.push({
        type: "function_call_output",
        call_id: `h_${i}`,
        output: [
          { type: "input_text", text: `frame ${i}` },
          {
            type: "input_image",
            image_url: `data:image/png;base64,${i === 0 ? frame : Buffer.from(rgbNoisePng(320, 240, 100 + i).png).toString("base64")}`,
          },
        ],
      });
    }
    const body = JSON.stringify({ model: "qwen", stream: false, store: false, input: history });
    const episodes = await Promise.all(Array.from({ length: 50 }, () => sidecar.createEpisode({})));
    await Promise.all(
      episodes.map(async (e) => {
        const res = await fetch(`${e.urls.responses}/responses`, {
          method: "POST",
          headers: { ...json, authorization: `Bearer ${e.ingress_key}` },
          body,
        });
        await res.text();
      }),
    );
    figures.rss_50_episodes_30_images_mb = rss();
    log(
      `memory: RSS idle after the load ${figures.rss_idle_mb.toFixed(1)} MB (goal ≤ 100), with 50 episodes × 30-image history ${figures.rss_50_episodes_30_images_mb.toFixed(1)} MB`,
    );
  } finally {
    await sidecar.stopAndRemove();
    await sidecarNoFsync.stopAndRemove();
    portkey.proc.kill();
    floor.proc.kill();
    upstream.proc.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }

  if (only.length === 0) Object.assign(figures, await measureColdStart(log));
  return figures;
}

/** The same sources built the other way than the Makefile does (with or without --bytecode). */
function buildOtherWay(bytecode: boolean): string {
  const out = join(temporaryDirectory("ura-bench-build-"), "ura-sidecar");
  const built = Bun.spawnSync(
    [
      "node_modules/.bin/bun",
      "build",
      "--compile",
      ...(bytecode ? ["--bytecode"] : []),
      "--no-compile-autoload-dotenv",
      "--no-compile-autoload-bunfig",
      "src/main.ts",
      "src/images/conversion-worker.ts",
      "src/lib/sha256-worker.ts",
      "--outfile",
      out,
    ],
    { cwd: root, stdout: "pipe", stderr: "pipe" },
  );
  if (built.exitCode !== 0) throw new Error(`bun build failed: ${built.stderr.toString()}`);
  return out;
}

/**
 * Cold start, exec to the socket answering (/health/live) and to /health/ready (the
 * codecs warm), for the Makefile's build and the other build, interleaved; and the RSS
 * once ready (start-up and warm-up, no load yet). Medians of 5.
 */
async function measureColdStart(log: (line: string) => void): Promise<Record<string, number>> {
  const makefileBytecode = readFileSync(join(root, "Makefile"), "utf8").includes("--bytecode");
  const builds = [
    { name: makefileBytecode ? "bytecode" : "plain", path: binaryPath },
    { name: makefileBytecode ? "plain" : "bytecode", path: buildOtherWay(!makefileBytecode) },
  ];
  const samples = new Map(
    builds.map((b) => [b.name, { live: [] as number[], ready: [] as number[], rss: [] as number[] }]),
  );
  try {
    for (let i = 0; i < 5; i++) {
      for (const build of builds) {
        const t0 = performance.now();
        const p = await startSidecarProcess({ args: ["--log-level", "warn"], binary: build.path });
        try {
          const live = (await untilAnswers(`${p.url}/health/live`)) - t0;
          const ready = (await untilAnswers(`${p.url}/health/ready`)) - t0;
          const sample = samples.get(build.name);
          sample?.live.push(live);
          sample?.ready.push(ready);
          if (build.path === binaryPath) {
            // Idle, as after the load: start-up's own garbage collected (src/body/reclaim-memory.ts waits 2 s).
            await Bun.sleep(3_000);
            const status = readFileSync(`/proc/${p.proc.pid}/status`, "utf8");
            sample?.rss.push(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
          }
        } finally {
          await p.stopAndRemove();
        }
      }
    }
  } finally {
    // The other build is ~110 MB: not left behind in the temporary directory.
    for (const build of builds)
      if (build.path !== binaryPath) rmSync(dirname(build.path), { recursive: true, force: true });
  }
  const figures: Record<string, number> = {};
  for (const build of builds) {
    const sample = samples.get(build.name);
    figures[`cold_start_${build.name}_ms`] = median(sample?.ready ?? []);
    figures[`cold_start_${build.name}_listen_ms`] = median(sample?.live ?? []);
    log(
      `cold start, ${build.name} build${build.path === binaryPath ? " (the Makefile's)" : ""} (median of 5): socket answers ${median(sample?.live ?? []).toFixed(0)} ms, ready with codecs warm ${median(sample?.ready ?? []).toFixed(0)} ms (goal ≤ 300)`,
    );
  }
  const made = samples.get(builds[0]?.name ?? "");
  figures.cold_start_ms = median(made?.ready ?? []);
  figures.cold_start_listen_ms = median(made?.live ?? []);
  figures.rss_after_start_mb = median(made?.rss ?? []);
  log(
    `memory: RSS 3 s after start-up and warm-up ${figures.rss_after_start_mb.toFixed(1)} MB (goal ≤ 100; ~47 MB of it the binary's own file pages)`,
  );
  return figures;
}

// `bun bench/gateway.ts [case …]`: only the named cases (e.g. text20_json_c16), or everything.
if (import.meta.main) await runGatewayBench(console.log, process.argv.slice(2));
