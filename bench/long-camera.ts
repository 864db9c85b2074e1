/**
 * Long camera episode bench: the compiled sidecar (dist/ura-sidecar) on the
 * instant upstream (instant-chat-upstream.ts), one episode of `turns` turns
 * (default 100) under the body_budget policy, through the Responses ingress and
 * through the Gemini ingress. Each turn adds one new deterministic 640×480
 * camera-like frame with sensor noise in a tool result, and the whole history is
 * resent every turn, the way the real clients do. Figures, against baselines of
 * the same run:
 *   records ÷ distinct content   records bytes (lines + blobs) over the distinct image
 *                                bytes (PNG + WebP) plus the distinct text    goal ≤ 1.2
 *   records turn 100 ÷ turn 50   linear gives 2, quadratic 4                  goal ≤ 2.2
 *   turns answered 200 under the provider body limit                         goal: all
 *   sidecar time per MB of request, turn 100 ÷ turn 10 (medians of 5 turns)   goal ≤ 1.5
 *   text lines' share of the records (what repeats once images are blobs)
 *   sidecar RSS after the episode, and its peak (VmHWM: the sidecar is started
 *   for the episode, so its peak is the episode's, during the last turns)   goal ≤ 300 MB
 *   PNGs converted (cache misses): body_budget converts only frames it may send
 *   event-loop stall: p99 of a text exchange while another episode converts
 *   4000×3000 frames, minus its p99 alone                                    goal ≤ 50 ms
 * Sidecar time is the client's round trip on the instant upstream (which parses
 * the body it gets): an upper bound on the time the sidecar adds.
 *   bun bench/long-camera.ts [turns]
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cameraLikePng } from "../src/images/synthetic-frames.ts";
import { directoryBytes } from "../src/records/data-dir-budget.ts";
import type { ExchangeStage } from "../src/records/exchange-lines.ts";
import { openRecords, type RecordedExchange } from "../src/records/read-records.ts";
import { temporaryDirectory } from "../test/support/exit-cleanup.ts";
import { imageTurnRequest } from "../test/support/image-turn.ts";
import { startSidecarProcess } from "../test/support/sidecar-process.ts";
import { type CameraHistory, geminiCameraHistory, responsesCameraHistory } from "./camera-history.ts";
import { spawnInstantUpstream } from "./spawn-server.ts";

const MiB = 1024 * 1024;
const providerLimit = 6 * MiB;

const cameraPng = (seed: number) => cameraLikePng(640, 480, seed).toBase64();

/** Resident memory now (VmRSS) or at its peak so far (VmHWM), in MB. */
export function rssMb(pid: number, field: "VmRSS" | "VmHWM" = "VmRSS"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN) / 1024;
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

type Ingress = {
  name: "responses" | "gemini";
  url: (launch: { urls: { responses: string; gemini: string } }) => string;
  headers: (key: string) => Record<string, string>;
  history: (frames: string[]) => CameraHistory;
};

const ingresses: Ingress[] = [
  {
    name: "responses",
    url: (launch) => `${launch.urls.responses}/responses`,
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    history: (frames) => responsesCameraHistory(frames, { stream: true }),
  },
  {
    name: "gemini",
    url: (launch) => `${launch.urls.gemini}/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse`,
    headers: (key) => ({ "x-goog-api-key": key }),
    history: geminiCameraHistory,
  },
];

async function runEpisode(
  ingress: Ingress,
  frames: string[],
  upstreamUrl: string,
  log: (line: string) => void,
): Promise<Record<string, number>> {
  const turns = frames.length;
  const dataDir = temporaryDirectory("ura-bench-camera-");
  // The default client body limit (body_limit_bytes) holds the whole 100-frame history (~80 MB).
  const sidecar = await startSidecarProcess({
    upstreamUrl,
    dataDir,
    config: { context: { policy: "body_budget" } },
    args: ["--log-level", "warn"],
  });
  const figures: Record<string, number> = {};
  try {
    const launch = await sidecar.createEpisode({ max_turns: 0 });
    const pid = sidecar.proc.pid;
    const idleRss = rssMb(pid);
    const msPerMb: number[] = [];
    const requestMb: number[] = [];
    const recordsAt: Record<number, number> = {};
    const bodyAt = ingress.history(frames);
    let ok = 0;
    for (let turn = 1; turn <= turns; turn++) {
      const body = bodyAt(turn);
      const started = performance.now();
      const res = await fetch(ingress.url(launch), {
        method: "POST",
        headers: { "content-type": "application/json", ...ingress.headers(launch.ingress_key) },
        body,
      });
      const text = await res.text();
      const ms = performance.now() - started;
      if (res.status === 200) ok += 1;
      else log(`  turn ${turn}: HTTP ${res.status} ${text.slice(0, 200)}`);
      requestMb.push(body.length / MiB);
      msPerMb.push(ms / (body.length / MiB));
      if (turn === 10 || turn === 50 || turn === turns) recordsAt[turn] = directoryBytes(dataDir);
      if (turn % 25 === 0)
        log(
          `  ${ingress.name} turn ${turn}: ${(body.length / MiB).toFixed(1)} MB request, ${ms.toFixed(0)} ms`,
        );
    }
    // After the last answer has settled (the sidecar frees a large request's memory once answered).
    await Bun.sleep(1000);
    const rssAfter = rssMb(pid);
    const rssPeak = rssMb(pid, "VmHWM");

    const records = openRecords(dataDir);
    const episode = records.readEpisode(launch.id);
    const upstreamBytes = episode.exchanges.map((exchange) =>
      Buffer.byteLength(records.upstreamRequestText(exchange) ?? ""),
    );
    const underLimit = upstreamBytes.filter((bytes) => bytes > 0 && bytes <= providerLimit).length;
    const blobBytes = directoryBytes(join(dataDir, "blobs"));
    const lineBytes = (stage: ExchangeStage) =>
      episode.exchanges.reduce((sum, exchange) => sum + (exchange.stage(stage)?.text.length ?? 0) + 1, 0);
    const allLines = directoryBytes(join(dataDir, "episodes"));
    const last = episode.exchanges.at(-1);
    // Distinct text: the last exchange's request lines (the whole text history once), plus every
    // exchange's own answer lines (new each turn).
    const historyStages: ExchangeStage[] = ["client_request", "after_context", "upstream_request"];
    const lastHistory = historyStages.reduce(
      (sum, stage) => sum + (last?.stage(stage)?.text.length ?? 0) + 1,
      0,
    );
    const answers = (["upstream_response", "delivered", "status"] as const).reduce(
      (sum, stage) => sum + lineBytes(stage),
      0,
    );
    const distinct = blobBytes + lastHistory + answers;
    const repeatedHistory = historyStages.reduce((sum, stage) => sum + lineBytes(stage), 0);
    const total = recordsAt[turns] ?? Number.NaN;
    const conversions = countConversions(episode.exchanges);
    const p = `camera_${ingress.name}`;
    figures[`${p}_turns_ok`] = ok;
    figures[`${p}_turns_under_body_limit`] = underLimit;
    figures[`${p}_records_mb`] = total / MiB;
    figures[`${p}_records_vs_distinct`] = total / distinct;
    figures[`${p}_records_turn${turns}_vs_turn50`] = total / (recordsAt[50] ?? Number.NaN);
    figures[`${p}_text_lines_share`] = allLines / total;
    figures[`${p}_history_text_vs_once`] = repeatedHistory / lastHistory;
    const late = msPerMb.slice(-5);
    const early = msPerMb.slice(7, 12);
    figures[`${p}_ms_per_mb_turn10`] = median(early);
    figures[`${p}_ms_per_mb_turn${turns}`] = median(late);
    figures[`${p}_ms_per_mb_turn${turns}_vs_turn10`] = median(late) / median(early);
    figures[`${p}_rss_idle_mb`] = idleRss;
    figures[`${p}_rss_after_mb`] = rssAfter;
    figures[`${p}_rss_peak_mb`] = rssPeak;
    figures[`${p}_conversions`] = conversions;
    log(
      `| ${ingress.name} | ${ok}/${turns} | ${underLimit}/${turns} | ${(total / MiB).toFixed(1)} MB | ` +
        `${(total / distinct).toFixed(3)} (≤ 1.2) | ${(total / (recordsAt[50] ?? Number.NaN)).toFixed(2)} (≤ 2.2) | ` +
        `${median(early).toFixed(1)} → ${median(late).toFixed(1)} ms/MB = ${(median(late) / median(early)).toFixed(2)} (≤ 1.5) | ` +
        `${(allLines / MiB).toFixed(2)} MB (${((100 * allLines) / total).toFixed(1)}%), history ×${(repeatedHistory / lastHistory).toFixed(0)} | ` +
        `${idleRss.toFixed(0)} → ${rssAfter.toFixed(0)} MB, peak ${rssPeak.toFixed(0)} MB (≤ 300) | ${conversions} | ${requestMb.at(-1)?.toFixed(1)} MB |`,
    );
  } finally {
    await sidecar.stopAndRemove();
    // Its records are read above: a 100-turn episode leaves its whole camera history behind.
    rmSync(dataDir, { recursive: true, force: true });
  }
  return figures;
}

/** PNGs the episode's exchanges converted to WebP (cache misses), from their upstream_request lines. */
export function countConversions(exchanges: Pick<RecordedExchange, "line">[]): number {
  return exchanges.reduce(
    (sum, exchange) => sum + (exchange.line("upstream_request")?.images?.converted ?? 0),
    0,
  );
}

const percentile99 = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * 0.99))] ??
  Number.NaN;

/**
 * Event-loop stall: p99 of a text-only exchange on one episode, alone and while another
 * episode converts 4000×3000 frames (each a new frame, so no cache hit). Goal: ≤ 50 ms added.
 */
async function runStall(
  upstreamUrl: string,
  log: (line: string) => void,
  workers?: number,
): Promise<Record<string, number>> {
  const big = [1, 2].map((seed) => cameraLikePng(4000, 3000, 500 + seed).toBase64());
  const sidecar = await startSidecarProcess({
    upstreamUrl,
    config: workers === undefined ? {} : { images: { workers } },
    args: ["--log-level", "error"],
  });
  try {
    const text = await sidecar.createEpisode({ max_turns: 0 });
    const camera = await sidecar.createEpisode({ max_turns: 0 });
    const post = (launch: typeof text, body: string) =>
      fetch(`${launch.urls.responses}/responses`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${launch.ingress_key}` },
        body,
      }).then((res) => res.text());
    const textBody = JSON.stringify({
      model: "ura-qwen",
      stream: false,
      store: false,
      input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "status?" }] }],
    });
    const timeTextExchanges = async (count: number) => {
      const times: number[] = [];
      for (let i = 0; i < count; i++) {
        const started = performance.now();
        await post(text, textBody);
        times.push(performance.now() - started);
      }
      return times;
    };
    await timeTextExchanges(5);
    const alone = await timeTextExchanges(40);
    let converting = true;
    const conversions = (async () => {
      for (const frame of big) {
        await post(camera, JSON.stringify(imageTurnRequest(undefined, [frame])));
      }
      converting = false;
    })();
    // Let the first big request arrive and start converting.
    await Bun.sleep(1500);
    const during: number[] = [];
    while (converting && during.length < 200) during.push(...(await timeTextExchanges(1)));
    await conversions;
    const added = percentile99(during) - percentile99(alone);
    const label = workers === 0 ? "conversion on the event loop (baseline)" : "conversion in the worker pool";
    log(
      `event-loop stall, ${label}: text exchange p99 alone ${percentile99(alone).toFixed(1)} ms, while 4000×3000 frames convert ${percentile99(during).toFixed(1)} ms (${during.length} exchanges): +${added.toFixed(1)} ms (goal ≤ 50)`,
    );
    const p = workers === 0 ? "stall_on_event_loop" : "stall";
    return {
      [`${p}_text_p99_alone_ms`]: percentile99(alone),
      [`${p}_text_p99_during_conversion_ms`]: percentile99(during),
      [`${p}_text_p99_added_ms`]: added,
    };
  } finally {
    await sidecar.stopAndRemove();
  }
}

export async function runLongCameraBench(
  log: (line: string) => void = console.log,
  turns = Number(process.env.URA_BENCH_CAMERA_TURNS ?? 100),
): Promise<Record<string, number>> {
  const frames = Array.from({ length: turns }, (_, i) => cameraPng(1000 + i));
  const upstream = await spawnInstantUpstream();
  const figures: Record<string, number> = {};
  try {
    log(
      `${turns} turns, one new 640×480 noisy frame per turn (PNG ~${(((frames[0]?.length ?? 0) * 3) / 4 / 1024).toFixed(0)} KB), whole history resent, body_budget policy, provider limit ${providerLimit / MiB} MiB.`,
    );
    log(
      "| ingress | 200 | under limit | records | records ÷ distinct | turn 100 ÷ 50 | sidecar ms/MB turn 10 → 100 | text lines, history repeats | RSS idle → after, peak | PNGs converted | last request |",
    );
    log("|---|---|---|---|---|---|---|---|---|---|---|");
    for (const ingress of ingresses)
      Object.assign(figures, await runEpisode(ingress, frames, upstream.url, log));
    Object.assign(figures, await runStall(upstream.url, log, 0));
    Object.assign(figures, await runStall(upstream.url, log));
  } finally {
    upstream.proc.kill();
  }
  return figures;
}

if (import.meta.main && process.argv[2] === "stall") {
  const upstream = await spawnInstantUpstream();
  console.log(await runStall(upstream.url, console.log, 0));
  console.log(await runStall(upstream.url, console.log));
  upstream.proc.kill();
  process.exit(0);
}
if (import.meta.main) {
  const figures = await runLongCameraBench(console.log, Number(process.argv[2] ?? 100));
  for (const [k, v] of Object.entries(figures))
    console.log(`${k} = ${Number.isInteger(v) ? v : v.toFixed(3)}`);
  process.exit(0);
}
