/**
 * Gateway bench: what the compiled sidecar adds to an exchange, against baselines
 * measured in the same run on the same instant upstream (instant-chat-upstream.ts):
 *   direct  — the bench client calls the upstream itself
 *   floor   — a minimal pass-through proxy (a few lines of Bun) in between
 *   Portkey — the Portkey AI gateway passing Chat Completions through (it forwards
 *             /v1/responses untranslated, so the peer comparison is on Chat requests)
 *   sidecar — dist/ura-sidecar (Responses ingress translated to Chat, records on) in between
 * For a text-only 20-turn request and a tool-call response, JSON and SSE, at concurrency 1 and 16:
 * added p50/p99 latency (sidecar − direct) and throughput. Also cold start (exec
 * to health-ready, WASM init included) and memory (RSS idle, and with 50 episodes
 * each holding a 30-image history).
 * All servers listen on 127.0.0.1 only; every loop is bounded.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { rgbNoisePng } from "../src/images/generate-png.ts";
import { startSidecarProcess } from "../test/support/sidecar-process.ts";
import { spawnServer } from "./spawn-server.ts";

const root = resolve(import.meta.dir, "..");

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

type Target = { name: string; url: string; headers: Record<string, string>; body: string };

async function load(target: Target, concurrency: number, total: number) {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next += 1;
        const t0 = performance.now();
        const res = await fetch(target.url, { method: "POST", headers: target.headers, body: target.body });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`${target.name}: HTTP ${res.status} ${text.slice(0, 200)}`);
        latencies.push(performance.now() - t0);
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

export async function runGatewayBench(
  log: (line: string) => void = console.log,
): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  const upstream = await spawnServer(
    ["node_modules/.bin/bun", "bench/instant-chat-upstream.ts"],
    /listening: (http:\/\/\S+)/,
  );
  const floor = await spawnServer(
    ["node_modules/.bin/bun", "bench/pass-through-proxy.ts", upstream.url],
    /listening: (http:\/\/\S+)/,
  );
  const portkey = await startPortkey();
  const dataDir = mkdtempSync(join(tmpdir(), "ura-bench-"));
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    dataDir,
    args: ["--log-level", "warn"],
  });
  try {
    const episode = await sidecar.createEpisode({});
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
    // Portkey's OpenAI provider passes Chat Completions through to a custom host (127.0.0.1 is trusted).
    const portkeyHeaders = {
      ...json,
      authorization: "Bearer sk-bench",
      "x-portkey-provider": "openai",
      "x-portkey-custom-host": upstream.url,
    };
    log(
      "Sidecar: Responses in, Chat Completions upstream, records on. Floor and Portkey: Chat Completions passed through.",
    );
    log(
      "| case | conc | direct p50 | added p50: floor / Portkey / sidecar | sidecar added p99 | rps: floor / Portkey / sidecar |",
    );
    log("|---|---|---|---|---|---|");
    const worst = {
      vsFloor: 0,
      vsPortkey: 0,
      tail: 0,
      rpsVsFloor: Number.POSITIVE_INFINITY,
      rpsVsPortkey: Number.POSITIVE_INFINITY,
    };
    for (const tools of [false, true]) {
      for (const stream of [false, true]) {
        for (const concurrency of [1, 16]) {
          const name = `${tools ? "toolcall" : "text20"}_${stream ? "sse" : "json"}`;
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
          // An added latency under 10 µs is measurement noise: floor the divisor there.
          const ratio = (a: number, b: number) => a / Math.max(b, 0.01);
          figures[`${key}_added_vs_floor_ratio`] = ratio(added("sidecar"), added("floor"));
          figures[`${key}_added_vs_portkey_ratio`] = ratio(added("sidecar"), added("portkey"));
          if (concurrency === 1) {
            worst.vsFloor = Math.max(worst.vsFloor, figures[`${key}_added_vs_floor_ratio`] ?? 0);
            // Steady tail: each round's added p99 against its added p50.
            const directRounds = rounds.direct ?? [];
            for (const [i, r] of (rounds.sidecar ?? []).entries()) {
              const d = directRounds[i] as Round;
              worst.tail = Math.max(worst.tail, ratio(r.p99 - d.p99, r.p50 - d.p50));
            }
          } else {
            worst.rpsVsFloor = Math.min(worst.rpsVsFloor, at("sidecar", "rps") / at("floor", "rps"));
          }
          worst.vsPortkey = Math.max(worst.vsPortkey, figures[`${key}_added_vs_portkey_ratio`] ?? 0);
          worst.rpsVsPortkey = Math.min(worst.rpsVsPortkey, at("sidecar", "rps") / at("portkey", "rps"));
          const f = (x: number | undefined) => (x ?? Number.NaN).toFixed(3);
          log(
            `| ${name} | ${concurrency} | ${f(direct)} | ${f(added("floor"))} / ${f(added("portkey"))} / ${f(added("sidecar"))} | ${f(figures[`${key}_added_p99_ms`])} | ${at("floor", "rps").toFixed(0)} / ${at("portkey", "rps").toFixed(0)} / ${at("sidecar", "rps").toFixed(0)} |`,
          );
        }
      }
    }
    figures.added_p50_ms = figures.text20_json_c1_added_p50_ms ?? Number.NaN;
    figures.added_vs_floor_ratio = worst.vsFloor;
    figures.added_vs_portkey_ratio = worst.vsPortkey;
    figures.p99_vs_p50_added_ratio = worst.tail;
    figures.rps_c16_vs_floor_ratio = worst.rpsVsFloor;
    figures.rps_vs_portkey_ratio = worst.rpsVsPortkey;
    log(
      `worst case: added p50 ${worst.vsFloor.toFixed(2)}× the floor at c=1 (goal ≤ 2); ${worst.vsPortkey.toFixed(2)}× Portkey's (goal < 1); added p99 ${worst.tail.toFixed(2)}× added p50 in the worst round (goal ≤ 3); rps at c=16 ${(worst.rpsVsFloor * 100).toFixed(0)}% of the floor's (goal ≥ 50%); rps ${worst.rpsVsPortkey.toFixed(2)}× Portkey's (goal > 1)`,
    );

    // Memory: idle, then 50 episodes each holding a 30-image history.
    const rss = () =>
      Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${sidecar.proc.pid}/status`, "utf8"))?.[1] ?? 0) /
      1024;
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
      `memory: RSS idle ${figures.rss_idle_mb.toFixed(1)} MB, with 50 episodes × 30-image history ${figures.rss_50_episodes_30_images_mb.toFixed(1)} MB`,
    );
  } finally {
    await sidecar.stop();
    portkey.proc.kill();
    floor.proc.kill();
    upstream.proc.kill();
  }

  // Cold start: exec to health-ready, WASM init and warm-up included.
  const starts: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const p = await startSidecarProcess({ args: ["--log-level", "warn"] });
    for (;;) {
      const ok = await fetch(`${p.url}/health/ready`).then(
        async (r) => r.ok || (r.status === 404 && (await fetch(`${p.url}/health`)).ok),
        () => false,
      );
      if (ok) break;
      await Bun.sleep(2);
    }
    starts.push(performance.now() - t0);
    await p.stop();
  }
  starts.sort((a, b) => a - b);
  figures.cold_start_ms = starts[2] ?? Number.NaN;
  log(`cold start (exec → health ready, median of 5): ${figures.cold_start_ms.toFixed(0)} ms`);
  return figures;
}

if (import.meta.main) await runGatewayBench();
