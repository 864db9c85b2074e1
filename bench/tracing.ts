/**
 * The cost of OpenTelemetry tracing: the compiled binary with no OTEL_* settings
 * (the baseline: the SDK is never imported) against the same binary exporting
 * every span over OTLP/HTTP to a local sink, in the same run. Start-up is spawn →
 * /health/ready 200; per exchange is one non-streamed Responses text turn against
 * the instant upstream, sequential, after a warm-up. Ratios are on / off.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { temporaryDirectory } from "../test/support/exit-cleanup.ts";
import { spawnInstantUpstream, spawnServer } from "./spawn-server.ts";

const root = resolve(import.meta.dir, "..");
const binary = join(root, "dist/ura-sidecar");
const password = "bench-control-password-0123456789";

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function startSidecar(upstream: string, dataRoot: string, env: Record<string, string>) {
  const started = performance.now();
  const { url, proc } = await spawnServer(
    [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", mkdtempSync(join(dataRoot, "run-"))],
    /listening on (http:\/\/\S+)/,
    {
      env: {
        PATH: process.env.PATH ?? "",
        URA_CONTROL_PASSWORD: password,
        URA_UPSTREAM_URL: upstream,
        ...env,
      },
      stderr: "ignore",
    },
  );
  while ((await fetch(`${url}/health/ready`).catch(() => undefined))?.status !== 200) await Bun.sleep(2);
  return { url, proc, startMs: performance.now() - started };
}

async function exchangeMs(url: string, warmUp: number, measured: number): Promise<number[]> {
  const created = await fetch(`${url}/control/episodes`, {
    method: "POST",
    headers: { authorization: `Bearer ${password}`, "content-type": "application/json" },
    body: "{}",
  });
  const episode = (await created.json()) as { urls: { responses: string }; ingress_key: string };
  const body = JSON.stringify({ model: "m", input: "Say hello.", stream: false });
  const times: number[] = [];
  for (let i = 0; i < warmUp + measured; i++) {
    const t0 = performance.now();
    const res = await fetch(`${episode.urls.responses}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${episode.ingress_key}`, "content-type": "application/json" },
      body,
    });
    if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
    if (i >= warmUp) times.push(performance.now() - t0);
  }
  return times;
}

export async function runTracingBench(log: (line: string) => void): Promise<Record<string, number>> {
  const { url: upstream, proc: upstreamProc } = await spawnInstantUpstream();
  let exportedBytes = 0;
  const sink = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      exportedBytes += (await req.arrayBuffer()).byteLength;
      return Response.json({});
    },
  });
  const modes = {
    off: {},
    on: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.port}`, OTEL_BSP_SCHEDULE_DELAY: "200" },
  };
  const figures: Record<string, { start: number[]; exchange: number[] }> = {
    off: { start: [], exchange: [] },
    on: { start: [], exchange: [] },
  };
  // Every sidecar's data directory lives under this one, removed when the bench ends.
  const dataRoot = temporaryDirectory("ura-bench-tracing-");
  try {
    // Alternating rounds, so that load from elsewhere on the machine falls on both modes alike.
    for (let round = 0; round < 3; round++) {
      for (const [mode, env] of Object.entries(modes)) {
        const sidecar = await startSidecar(upstream, dataRoot, env);
        try {
          figures[mode]?.start.push(sidecar.startMs);
          figures[mode]?.exchange.push(...(await exchangeMs(sidecar.url, 20, 100)));
        } finally {
          sidecar.proc.kill("SIGTERM");
          await sidecar.proc.exited;
        }
      }
    }
  } finally {
    sink.stop(true);
    upstreamProc.kill();
    rmSync(dataRoot, { recursive: true, force: true });
  }
  const off = { start: median(figures.off?.start ?? []), exchange: median(figures.off?.exchange ?? []) };
  const on = { start: median(figures.on?.start ?? []), exchange: median(figures.on?.exchange ?? []) };
  log("| tracing | start-up to ready (ms, median of 3) | exchange p50 (ms, 300 turns) |");
  log("|---|---|---|");
  log(`| off (baseline) | ${off.start.toFixed(1)} | ${off.exchange.toFixed(2)} |`);
  log(`| on (OTLP/HTTP) | ${on.start.toFixed(1)} | ${on.exchange.toFixed(2)} |`);
  log(`| on / off | ${(on.start / off.start).toFixed(3)} | ${(on.exchange / off.exchange).toFixed(3)} |`);
  log(`exported ${exportedBytes} bytes of OTLP JSON`);
  return {
    tracing_off_start_ms: off.start,
    tracing_on_start_ms: on.start,
    tracing_start_ratio: on.start / off.start,
    tracing_off_exchange_p50_ms: off.exchange,
    tracing_on_exchange_p50_ms: on.exchange,
    tracing_exchange_ratio: on.exchange / off.exchange,
    tracing_exported_bytes: exportedBytes,
  };
}

if (import.meta.main) await runTracingBench(console.log);
