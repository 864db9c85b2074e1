/**
 * First camera frame after ready: whether /health/ready really means warm codecs. Each
 * round starts the binary, waits for /health/ready, sends at once one exchange with a
 * 640×480 camera PNG (never the warm-up frame), then five more, each with a frame of its
 * own; the conversion time is the one recorded with the exchange (upstream_request
 * `images.encodeMs`, decode and encode in the worker, without queueing). The baseline is
 * the same process's steady conversion (median of the five later frames). Also exec to
 * ready and exec to the first frame's answer.
 * With URA_BASELINE_BINARY=<another build>[,<another>…] every build runs, rounds
 * interleaved (A/B). `bun bench/first-frame.ts [rounds] [--no-idle]`.
 * Then the idle memory: after the frames, how much RSS a sidecar whose conversion worker
 * sat idle past its idle period (defaultIdleReplaceMs) gives back, and the conversion
 * time of the next frame after that against the steady one.
 */
import { readFileSync } from "node:fs";
import { defaultIdleReplaceMs } from "../src/images/conversion-pool.ts";
import { rgbNoisePng } from "../src/images/generate-png.ts";
import { openRecords } from "../src/records/read-records.ts";
import { binaryPath, type SidecarProcess, startSidecarProcess } from "../test/support/sidecar-process.ts";
import { spawnInstantUpstream, untilAnswers } from "./spawn-server.ts";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

/** One Responses exchange with one camera frame; resolves with the recorded conversion time. */
async function sendFrame(
  sidecar: SidecarProcess,
  episode: { url: string; key: string; id: string },
  seed: number,
) {
  const png = rgbNoisePng(640, 480, seed).png;
  const res = await fetch(`${episode.url}/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${episode.key}` },
    body: JSON.stringify({
      model: "qwen",
      stream: false,
      store: false,
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "look" },
            {
              type: "input_image",
              image_url: `data:image/png;base64,${Buffer.from(png).toString("base64")}`,
            },
          ],
        },
      ],
    }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`frame exchange: HTTP ${res.status} ${text.slice(0, 200)}`);
  const exchanges = openRecords(sidecar.dataDir).readEpisode(episode.id).exchanges;
  const images = exchanges.at(-1)?.stage("upstream_request")?.value.images as
    | { converted: number; encodeMs: number }
    | undefined;
  if (images?.converted !== 1) throw new Error("the frame was not converted");
  return images.encodeMs;
}

type Sample = { ready: number; firstAnswer: number; first: number; steady: number };

async function round(binary: string, upstreamUrl: string, seed: number): Promise<Sample> {
  const t0 = performance.now();
  const sidecar = await startSidecarProcess({ upstreamUrl, binary, args: ["--log-level", "warn"] });
  try {
    const ready = (await untilAnswers(`${sidecar.url}/health/ready`)) - t0;
    const launched = await sidecar.createEpisode({});
    const episode = { url: launched.urls.responses, key: launched.ingress_key, id: launched.id };
    const first = await sendFrame(sidecar, episode, seed);
    const firstAnswer = performance.now() - t0;
    const later: number[] = [];
    for (let i = 1; i <= 5; i++) later.push(await sendFrame(sidecar, episode, seed + i));
    return { ready, firstAnswer, first, steady: median(later) };
  } finally {
    await sidecar.stopAndRemove();
  }
}

export async function runFirstFrameBench(
  log: (line: string) => void = console.log,
  rounds = 5,
  withIdleWorker = true,
): Promise<Record<string, number>> {
  const upstream = await spawnInstantUpstream();
  const builds = [{ name: "this", path: binaryPath }];
  for (const [i, path] of (process.env.URA_BASELINE_BINARY ?? "").split(",").filter(Boolean).entries())
    builds.push({ name: `baseline${i === 0 ? "" : i + 1}`, path });
  const figures: Record<string, number> = {};
  try {
    const samples = new Map(builds.map((b) => [b.name, [] as Sample[]]));
    for (let i = 0; i < rounds; i++)
      for (const build of builds)
        samples.get(build.name)?.push(await round(build.path, upstream.url, 1000 + i * 10));
    log(
      "| build | exec → ready ms | exec → first frame answered ms | first frame conversion ms | steady ms | first ÷ steady |",
    );
    log("|---|---|---|---|---|---|");
    for (const build of builds) {
      const s = samples.get(build.name) ?? [];
      const at = (field: keyof Sample) => median(s.map((x) => x[field]));
      const ratio = median(s.map((x) => x.first / x.steady));
      const prefix = build.name === "this" ? "" : `${build.name}_`;
      figures[`${prefix}first_frame_ready_ms`] = at("ready");
      figures[`${prefix}first_frame_answered_ms`] = at("firstAnswer");
      figures[`${prefix}first_frame_conversion_ms`] = at("first");
      figures[`${prefix}first_frame_steady_conversion_ms`] = at("steady");
      figures[`${prefix}first_frame_vs_steady_ratio`] = ratio;
      log(
        `| ${build.name === "this" ? build.path : `baseline ${build.path}`} | ${at("ready").toFixed(0)} | ${at("firstAnswer").toFixed(0)} | ${at("first").toFixed(1)} | ${at("steady").toFixed(1)} | ${ratio.toFixed(2)} |`,
      );
    }
    if (withIdleWorker) Object.assign(figures, await idleWorker(log, upstream.url));
  } finally {
    upstream.proc.kill();
  }
  log(
    `(medians of ${rounds} interleaved rounds; load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")})`,
  );
  return figures;
}

/**
 * A sidecar converting frames, then idle past its worker's idle period: RSS before and
 * after, and the next frame's conversion against the steady one.
 */
async function idleWorker(log: (line: string) => void, upstreamUrl: string): Promise<Record<string, number>> {
  const sidecar = await startSidecarProcess({ upstreamUrl, args: ["--log-level", "warn"] });
  try {
    await untilAnswers(`${sidecar.url}/health/ready`);
    const launched = await sidecar.createEpisode({});
    const episode = { url: launched.urls.responses, key: launched.ingress_key, id: launched.id };
    const steady: number[] = [];
    for (let i = 0; i < 6; i++) steady.push(await sendFrame(sidecar, episode, 2000 + i));
    // Past the sidecar's own idle collection (2 s) but before the worker's idle period.
    await Bun.sleep(3_000);
    const busy = rssMb(sidecar.proc.pid);
    await Bun.sleep(defaultIdleReplaceMs + 2_000);
    const idle = rssMb(sidecar.proc.pid);
    const next = await sendFrame(sidecar, episode, 2100);
    const steadyMs = median(steady.slice(1));
    log(
      `idle worker: RSS 3 s after six 640×480 frames ${busy.toFixed(1)} MB, after ${((defaultIdleReplaceMs + 5_000) / 1000).toFixed(0)} s idle ${idle.toFixed(1)} MB; the next frame converts in ${next.toFixed(1)} ms against ${steadyMs.toFixed(1)} ms steady (${(next / steadyMs).toFixed(2)}×)`,
    );
    return {
      idle_worker_rss_busy_mb: busy,
      idle_worker_rss_idle_mb: idle,
      idle_worker_next_frame_vs_steady_ratio: next / steadyMs,
    };
  } finally {
    await sidecar.stopAndRemove();
  }
}

if (import.meta.main)
  await runFirstFrameBench(console.log, Number(process.argv[2] ?? 5), !process.argv.includes("--no-idle"));
