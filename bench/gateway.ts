/**
 * Gateway bench: what the compiled sidecar adds to an exchange, against baselines
 * measured in the same run on the same scripted upstream:
 *   direct  — the bench client calls the scripted upstream itself
 *   floor   — a minimal pass-through proxy (a few lines of Bun) in between
 *   sidecar — dist/ura-sidecar (Responses ingress, records on) in between
 * For a text-only 20-turn request and a tool-call response, at concurrency 1 and 16:
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

const root = resolve(import.meta.dir, "..");

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function spawnServer(
  args: string[],
  pattern: RegExp,
): Promise<{ url: string; proc: ReturnType<typeof Bun.spawn> }> {
  const proc = Bun.spawn(args, { cwd: root, stdout: "pipe", stderr: "inherit" });
  const decoder = new TextDecoder();
  let out = "";
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    out += decoder.decode(value);
    const url = pattern.exec(out)?.[1];
    if (url) {
      void (async () => {
        while (!(await reader.read()).done) {}
      })();
      return { url, proc };
    }
  }
  proc.kill();
  throw new Error(`${args.join(" ")} did not start: ${out}`);
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

export async function runGatewayBench(
  log: (line: string) => void = console.log,
): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  const upstream = await spawnServer(
    ["node_modules/.bin/bun", "fixtures/scripted-upstream/serve-scripted-upstream.ts"],
    /listening: (http:\/\/\S+)/,
  );
  const floor = await spawnServer(
    ["node_modules/.bin/bun", "bench/pass-through-proxy.ts", upstream.url],
    /listening: (http:\/\/\S+)/,
  );
  const dataDir = mkdtempSync(join(tmpdir(), "ura-bench-"));
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    dataDir,
    args: ["--log-level", "warn"],
  });
  try {
    const episode = await sidecar.createEpisode({});
    const turns = textTurns(20);
    const chatText = JSON.stringify({
      model: "qwen",
      messages: turns,
      stream: true,
      stream_options: { include_usage: true },
      enable_thinking: false,
    });
    const responsesText = JSON.stringify({
      model: "qwen",
      stream: false,
      store: false,
      input: turns.map((m) => ({ role: m.role, content: m.content })),
    });
    const chatTools = JSON.stringify({
      model: "qwen",
      messages: [{ role: "user", content: "observe" }],
      tools: robotTools.map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.parameters },
      })),
      stream: true,
      stream_options: { include_usage: true },
      enable_thinking: false,
    });
    const responsesTools = JSON.stringify({
      model: "qwen",
      stream: false,
      store: false,
      input: [{ role: "user", content: "observe" }],
      tools: robotTools,
    });
    const json = { "content-type": "application/json" };
    const sidecarHeaders = { ...json, authorization: `Bearer ${episode.ingress_key}` };
    const cases = [
      { name: "text20", chat: chatText, responses: responsesText },
      { name: "toolcall", chat: chatTools, responses: responsesTools },
    ];
    log(
      "| case | conc | direct p50 | floor p50 | sidecar p50 | added p50 | added p99 | floor added p50 | sidecar rps | direct rps |",
    );
    log("|---|---|---|---|---|---|---|---|---|---|");
    for (const c of cases) {
      for (const concurrency of [1, 16]) {
        const total = concurrency === 1 ? 400 : 1600;
        const targets: Target[] = [
          { name: "direct", url: `${upstream.url}/chat/completions`, headers: json, body: c.chat },
          { name: "floor", url: `${floor.url}/chat/completions`, headers: json, body: c.chat },
          {
            name: "sidecar",
            url: `${episode.urls.responses}/responses`,
            headers: sidecarHeaders,
            body: c.responses,
          },
        ];
        for (const t of targets) await load(t, concurrency, 50); // warm-up
        // Interleave rounds so drift on a shared machine hits all three alike.
        const results: Record<string, { p50: number[]; p99: number[]; rps: number[] }> = {};
        for (let round = 0; round < 3; round++) {
          for (const t of targets) {
            const r = await load(t, concurrency, Math.floor(total / 3));
            const slot = results[t.name] ?? { p50: [], p99: [], rps: [] };
            results[t.name] = slot;
            slot.p50.push(r.p50);
            slot.p99.push(r.p99);
            slot.rps.push(r.rps);
          }
        }
        const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
        const d = results.direct as { p50: number[]; p99: number[]; rps: number[] };
        const f = results.floor as typeof d;
        const s = results.sidecar as typeof d;
        const key = `${c.name}_c${concurrency}`;
        figures[`${key}_direct_p50_ms`] = med(d.p50);
        figures[`${key}_floor_added_p50_ms`] = med(f.p50) - med(d.p50);
        figures[`${key}_added_p50_ms`] = med(s.p50) - med(d.p50);
        figures[`${key}_added_p99_ms`] = med(s.p99) - med(d.p99);
        figures[`${key}_sidecar_rps`] = med(s.rps);
        figures[`${key}_direct_rps`] = med(d.rps);
        log(
          `| ${c.name} | ${concurrency} | ${med(d.p50).toFixed(3)} | ${med(f.p50).toFixed(3)} | ${med(s.p50).toFixed(3)} | ${figures[`${key}_added_p50_ms`]?.toFixed(3)} | ${figures[`${key}_added_p99_ms`]?.toFixed(3)} | ${figures[`${key}_floor_added_p50_ms`]?.toFixed(3)} | ${med(s.rps).toFixed(0)} | ${med(d.rps).toFixed(0)} |`,
        );
      }
    }
    figures.added_p50_ms = figures.text20_c1_added_p50_ms ?? Number.NaN;
    figures.added_vs_floor_ratio =
      (figures.text20_c1_added_p50_ms ?? 0) / Math.max(figures.text20_c1_floor_added_p50_ms ?? 0, 0.001);

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
    floor.proc.kill();
    upstream.proc.kill();
  }

  // Cold start: exec to health-ready, WASM init and warm-up included.
  const starts: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const p = await startSidecarProcess({ args: ["--log-level", "warn"] });
    for (;;) {
      const ok = await fetch(`${p.url}/health`).then(
        (r) => r.ok,
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
