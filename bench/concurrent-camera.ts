/**
 * Memory with many camera episodes at once: the compiled sidecar (dist/ura-sidecar,
 * default image cache, body_budget) on the instant upstream, 50 episodes alive
 * together, each building a 30-frame 640×480 camera history through the Responses
 * ingress (whole history resent: turns of 10, 20 and 30 frames, the episodes'
 * turns interleaved, a few requests in flight at a time). Then every episode is
 * cancelled. Figures, against the sidecar's own idle RSS in the same run:
 *   RSS holding 50 × 30-frame histories (after the last turn settled)   goal ≤ 500 MB
 *   peak RSS during the turns (VmHWM)
 *   RSS after the episodes ended, minus idle                           goal ≤ 50 MB
 *   wall time of the turns, and the PNGs converted (cache misses)
 * Each episode's frames are distinct files (an episode's PNGs carry its own
 * tEXt chunk, so they hash, cache and convert apart) drawn from 30 camera-like
 * frames: generating 1500 distinct noisy scenes takes longer than the run.
 *   bun bench/concurrent-camera.ts [episodes] [frames]
 */
import { cameraLikePng } from "../src/images/synthetic-frames.ts";
import { crc32 } from "../src/images/write-png.ts";
import { openRecords } from "../src/records/read-records.ts";
import { startSidecarProcess } from "../test/support/sidecar-process.ts";
import { responsesCameraHistory } from "./camera-history.ts";
import { countConversions, rssMb } from "./long-camera.ts";
import { spawnInstantUpstream } from "./spawn-server.ts";

/** The PNG with a tEXt chunk after its header: other bytes, the same pixels. */
function withText(png: Uint8Array, text: string): Uint8Array {
  const data = new TextEncoder().encode(`Comment\0${text}`);
  const chunk = new Uint8Array(12 + data.length);
  const view = new DataView(chunk.buffer);
  view.setUint32(0, data.length);
  chunk.set(new TextEncoder().encode("tEXt"), 4);
  chunk.set(data, 8);
  view.setUint32(8 + data.length, crc32(chunk.subarray(4, 8 + data.length)));
  const headerEnd = 8 + 25; // signature + IHDR
  const out = new Uint8Array(png.length + chunk.length);
  out.set(png.subarray(0, headerEnd));
  out.set(chunk, headerEnd);
  out.set(png.subarray(headerEnd), headerEnd + chunk.length);
  return out;
}

/** Runs the tasks with at most `limit` of them at once. */
async function withConcurrency(tasks: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < tasks.length) await tasks[next++]?.();
    }),
  );
}

export async function runConcurrentCameraBench(
  log: (line: string) => void = console.log,
  episodes = 50,
  framesPerEpisode = 30,
  inFlight = 4,
): Promise<Record<string, number>> {
  const scenes = Array.from({ length: framesPerEpisode }, (_, i) => cameraLikePng(640, 480, 3000 + i));
  const upstream = await spawnInstantUpstream();
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    config: { context: { policy: "body_budget" } },
    args: ["--log-level", "warn"],
  });
  try {
    const pid = sidecar.proc.pid;
    const launches = [];
    for (let e = 0; e < episodes; e++) launches.push(await sidecar.createEpisode({ max_turns: 0 }));
    await Bun.sleep(1000);
    const idle = rssMb(pid);
    const histories = launches.map((_, e) =>
      responsesCameraHistory(
        scenes.map((png) => withText(png, `episode ${e}`).toBase64()),
        { stream: false },
      ),
    );
    const step = Math.ceil(framesPerEpisode / 3);
    let failed = 0;
    let sentMb = 0;
    const started = performance.now();
    for (let turn = step; turn < framesPerEpisode + step; turn += step) {
      const upTo = Math.min(turn, framesPerEpisode);
      const tasks = launches.map((launch, e) => async () => {
        const body = histories[e]?.(upTo) ?? "";
        sentMb += body.length / (1024 * 1024);
        const res = await fetch(`${launch.urls.responses}/responses`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${launch.ingress_key}` },
          body,
        });
        await res.text();
        if (res.status !== 200) failed += 1;
      });
      await withConcurrency(tasks, inFlight);
      log(`  turn with ${upTo} frames: ${episodes} episodes, RSS ${rssMb(pid).toFixed(0)} MB`);
    }
    const seconds = (performance.now() - started) / 1000;
    await Bun.sleep(1500);
    const holding = rssMb(pid);
    const peak = rssMb(pid, "VmHWM");
    for (const launch of launches)
      await sidecar.control(`/episodes/${launch.id}/cancel`, { method: "POST" }).then((res) => res.text());
    await Bun.sleep(2000);
    const after = rssMb(pid);
    // Read once the memory figures are taken (the sidecar's idle collection must not run early).
    const records = openRecords(sidecar.dataDir);
    const conversions = launches.reduce(
      (sum, launch) => sum + countConversions(records.readEpisode(launch.id).exchanges),
      0,
    );
    log(
      `| ${episodes} × ${framesPerEpisode} frames, ${inFlight} in flight | ${idle.toFixed(0)} MB | ${holding.toFixed(0)} MB (≤ 500) | ${peak.toFixed(0)} MB | ` +
        `${after.toFixed(0)} MB, +${(after - idle).toFixed(0)} MB over idle (≤ 50) | ${failed} | ${sentMb.toFixed(0)} MB in ${seconds.toFixed(0)} s | ${conversions} |`,
    );
    return {
      concurrent_camera_episodes: episodes,
      concurrent_camera_failed_turns: failed,
      concurrent_camera_rss_idle_mb: idle,
      concurrent_camera_rss_holding_mb: holding,
      concurrent_camera_rss_peak_mb: peak,
      concurrent_camera_rss_after_end_mb: after,
      concurrent_camera_rss_after_end_over_idle_mb: after - idle,
      concurrent_camera_turns_seconds: seconds,
      concurrent_camera_conversions: conversions,
    };
  } finally {
    await sidecar.stopAndRemove();
    upstream.proc.kill();
  }
}

if (import.meta.main) {
  console.log(
    "| episodes | RSS idle | RSS holding the histories | peak | RSS after they ended | failed turns | sent | PNGs converted |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  const figures = await runConcurrentCameraBench(
    console.log,
    Number(process.argv[2] ?? 50),
    Number(process.argv[3] ?? 30),
  );
  for (const [k, v] of Object.entries(figures))
    console.log(`${k} = ${Number.isInteger(v) ? v : v.toFixed(3)}`);
  process.exit(0);
}
