/**
 * Images bench: on the same generated frames in one run,
 * - our lossless WebP encode time (@jsquash/webp WASM in Bun) vs native `cwebp -lossless`
 *   at the same settings (Debian package `webp`; skipped with a note when missing),
 *   at cwebp's `-z 0/1/2` presets (the default is z1), and the bytes as % of the PNG;
 * - the per-turn conversion cost for turn 1 vs turn 30 of a growing image history
 *   (the image cache makes turn 30 one encode plus 29 hash look-ups).
 * Goals (so that conversion never dominates a turn): within 1.3× of native encode time; turn 30 within 1.5× of turn 1.
 * `bun bench/images.ts` prints tables; `runImageBench()` returns flat figures.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { configSchema } from "../src/config/schema.ts";
import type { HubMessage, HubRequest } from "../src/hub/schema.ts";
import { type Codecs, loadCodecs } from "../src/images/codecs.ts";
import { createImageConverter } from "../src/images/convert-request.ts";
import { type GeneratedPng, rgbNoisePng, screenshotPng } from "../src/images/generate-png.ts";
import { createImageCache } from "../src/images/image-cache.ts";
import { convertOnThisThread } from "../src/images/png-to-webp.ts";
import { type WebpSettings, webpSettingsSchema } from "../src/images/settings.ts";
import { warmUpCodecs } from "../src/images/warm-up.ts";
import { temporaryDirectory } from "../test/support/exit-cleanup.ts";

const runs = 7;
const turns = 30;
const episodes = 3;
/** cwebp's lossless presets (`-z N` = method, quality), see WebPConfigLosslessPreset. */
const levels = {
  z0: { method: 0, quality: 0 },
  z1: { method: 1, quality: 20 },
  z2: { method: 2, quality: 25 },
};
type Level = keyof typeof levels;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

const round = (value: number, digits = 2) => Number(value.toFixed(digits));

function cwebpPath(): string | null {
  return Bun.which("cwebp");
}

/** One cwebp run: its own "Time to encode picture" (excludes reading the PNG), and the output size. */
function runCwebp(cwebp: string, pngPath: string, settings: WebpSettings, out: string) {
  const args = ["-v", "-lossless", "-exact", "-m", String(settings.method), "-q", String(settings.quality)];
  const result = Bun.spawnSync([cwebp, ...args, pngPath, "-o", out], { stderr: "pipe", stdout: "pipe" });
  const log = result.stderr.toString() + result.stdout.toString();
  const match = /Time to encode picture: ([\d.]+)s/.exec(log);
  if (result.exitCode !== 0 || !match?.[1]) throw new Error(`cwebp failed: ${log}`);
  return { ms: Number(match[1]) * 1000, bytes: Bun.file(out).size };
}

/**
 * Ours and cwebp alternate run by run, so both see the same load on a shared machine.
 * Medians and minimums of `runs` each.
 */
function timeEncodes(
  codecs: Codecs,
  frame: GeneratedPng,
  settings: WebpSettings,
  cwebp: string | null,
  dir: string,
) {
  const image = codecs.decodePng(frame.png);
  const pngPath = join(dir, "in.png");
  const out = join(dir, "out.webp");
  writeFileSync(pngPath, frame.png);
  const ours: number[] = [];
  const theirs: number[] = [];
  let oursBytes = 0;
  let theirBytes = 0;
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    oursBytes = codecs.encodeWebpLossless(image, settings).length;
    ours.push(performance.now() - start);
    if (cwebp) {
      const run = runCwebp(cwebp, pngPath, settings, out);
      theirs.push(run.ms);
      theirBytes = run.bytes;
    }
  }
  return {
    ours: { ms: median(ours), minMs: Math.min(...ours), bytes: oursBytes },
    cwebp: cwebp ? { ms: median(theirs), minMs: Math.min(...theirs), bytes: theirBytes } : null,
  };
}

function timePngDecode(codecs: Codecs, frame: GeneratedPng): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    codecs.decodePng(frame.png);
    times.push(performance.now() - start);
  }
  return median(times);
}

/** Turn t sends the whole history: t tool results, each with its own camera frame. */
function turnRequest(frames: string[], turn: number): HubRequest {
  const messages: HubMessage[] = [
    { role: "user", content: [{ type: "text", text: "Pick up the red block." }] },
  ];
  for (let t = 0; t < turn; t++) {
    const id = `call_${t}`;
    messages.push(
      { role: "assistant", text: null, toolCalls: [{ id, name: "capture_image", arguments: "{}" }] },
      {
        role: "tool",
        toolCallId: id,
        name: "capture_image",
        content: [{ type: "image", mediaType: "image/png", data: frames[t] ?? "" }],
      },
    );
  }
  return { model: "qwen", messages, tools: [], ignored: [] };
}

async function timeTurns(codecs: Codecs, settings: WebpSettings) {
  const frames = Array.from({ length: turns }, (_, t) => rgbNoisePng(640, 480, 100 + t).png.toBase64());
  const cacheBytes = configSchema.parse({}).images.cache_bytes;
  const perTurn: number[][] = Array.from({ length: turns }, () => []);
  for (let e = 0; e < episodes; e++) {
    const converter = createImageConverter({
      converter: convertOnThisThread(codecs),
      settings,
      cache: createImageCache(cacheBytes),
    });
    for (let turn = 1; turn <= turns; turn++) {
      const request = turnRequest(frames, turn);
      const start = performance.now();
      const { stats } = await converter.convertRequest(request);
      perTurn[turn - 1]?.push(performance.now() - start);
      if (stats.converted !== 1 || stats.cacheHits !== turn - 1) throw new Error(`turn ${turn}: cache miss`);
    }
  }
  const uncached = createImageConverter({
    converter: convertOnThisThread(codecs),
    settings,
    cache: createImageCache(cacheBytes),
  });
  const start = performance.now();
  await uncached.convertRequest(turnRequest(frames, turns));
  const uncachedMs = performance.now() - start;
  return { turn1: median(perTurn[0] ?? []), turn30: median(perTurn[turns - 1] ?? []), uncachedMs };
}

export async function runImageBench(log: (line: string) => void = () => {}): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  const defaults = webpSettingsSchema.parse({});
  let start = performance.now();
  const codecs = await loadCodecs();
  figures.images_codec_load_ms = round(performance.now() - start);
  figures.images_warm_up_ms = round(await warmUpCodecs(codecs, defaults));
  start = performance.now();
  await warmUpCodecs(codecs, defaults);
  figures.images_second_warm_up_ms = round(performance.now() - start);

  const frames: [string, GeneratedPng][] = [
    ["scene640", rgbNoisePng(640, 480, 11)],
    ["scene1280", rgbNoisePng(1280, 720, 12)],
    ["screen1280", screenshotPng(1280, 720)],
  ];
  const cwebp = cwebpPath();
  if (!cwebp) log("SKIP native comparison: cwebp not found (apt-get install -y webp)");
  const dir = temporaryDirectory("ura-images-bench-");
  try {
    log("frame       level  ours ms  cwebp ms  ours/cwebp  (min/min)  % of PNG (ours/cwebp) PNG bytes");
    for (const [name, frame] of frames) {
      figures[`images_png_bytes_${name}`] = frame.png.length;
      figures[`images_png_decode_ms_${name}`] = round(timePngDecode(codecs, frame));
      for (const [level, preset] of Object.entries(levels) as [Level, (typeof levels)[Level]][]) {
        const key = `${name}_${level}`;
        const { ours, cwebp: native } = timeEncodes(
          codecs,
          frame,
          webpSettingsSchema.parse(preset),
          cwebp,
          dir,
        );
        figures[`images_encode_ms_${key}`] = round(ours.ms);
        figures[`images_webp_pct_of_png_${key}`] = round((100 * ours.bytes) / frame.png.length, 1);
        let nativeColumns = "skipped";
        if (native) {
          figures[`images_cwebp_ms_${key}`] = round(native.ms);
          figures[`images_ours_vs_cwebp_${key}`] = round(ours.ms / native.ms);
          figures[`images_ours_vs_cwebp_min_${key}`] = round(ours.minMs / native.minMs);
          figures[`images_cwebp_pct_of_png_${key}`] = round((100 * native.bytes) / frame.png.length, 1);
          nativeColumns =
            `${String(round(native.ms)).padEnd(9)} ${String(figures[`images_ours_vs_cwebp_${key}`]).padEnd(11)}` +
            ` ${String(figures[`images_ours_vs_cwebp_min_${key}`]).padEnd(9)}`;
        }
        log(
          `${name.padEnd(11)} ${level.padEnd(6)} ${String(round(ours.ms)).padEnd(8)} ${nativeColumns.padEnd(31)} ` +
            `${figures[`images_webp_pct_of_png_${key}`]}% / ${figures[`images_cwebp_pct_of_png_${key}`] ?? "-"}%`.padEnd(
              18,
            ) +
            ` ${frame.png.length}`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const turnsResult = await timeTurns(codecs, defaults);
  figures.images_turn1_ms = round(turnsResult.turn1);
  figures.images_turn30_ms = round(turnsResult.turn30);
  figures.images_turn30_vs_turn1 = round(turnsResult.turn30 / turnsResult.turn1);
  figures.images_turn30_uncached_ms = round(turnsResult.uncachedMs);
  log("");
  log(`growing history of 640x480 camera frames, default settings (z1), median of ${episodes} episodes`);
  log(`turn 1:  ${figures.images_turn1_ms} ms (1 encode)`);
  log(
    `turn 30: ${figures.images_turn30_ms} ms (1 encode + 29 cache hits) = ${figures.images_turn30_vs_turn1}x turn 1 (goal ≤ 1.5x)`,
  );
  log(`turn 30 with an empty cache: ${figures.images_turn30_uncached_ms} ms (30 encodes)`);
  log(
    `codec load ${figures.images_codec_load_ms} ms, warm-up ${figures.images_warm_up_ms} ms (again: ${figures.images_second_warm_up_ms} ms)`,
  );
  return figures;
}

if (import.meta.main) {
  console.log(`lossless WebP vs native cwebp (median of ${runs}); ours/cwebp goal ≤ 1.3 at the default z1`);
  await runImageBench(console.log);
}
