/**
 * Warm-up bench: why the start-up warm-up encodes a camera-sized frame. The first
 * 640×480 encode after loading the WASM is several times slower than later ones; a
 * small (64×64) warm-up frame does not remove that penalty (measured: the engine
 * optimises the codec's loops only once they have run long enough); 160×160 and
 * 320×320 ones cost half the camera-sized one and leave the first 640×480 encode
 * 1.7× a steady one (5 interleaved runs, load ~11); a 640×640 one
 * does. So the warm-up cannot be made cheap, only moved off the start-up path (a
 * worker). Each variant runs in a fresh process (fresh WASM): warm up
 * with an N×N noisy frame, then time the first 640×480 encode and the median of the
 * next five (the steady baseline, same process).
 */
import { resolve } from "node:path";
import { killAtExit } from "../test/support/exit-cleanup.ts";

const root = resolve(import.meta.dir, "..");

if (process.argv[2] === "--child") {
  const { loadCodecs } = await import("../src/images/codecs.ts");
  const { cameraLikeFrame } = await import("../src/images/synthetic-frames.ts");
  const { webpSettingsSchema } = await import("../src/images/settings.ts");
  const size = Number(process.argv[3]);
  const settings = webpSettingsSchema.parse({});
  const codecs = await loadCodecs();
  let t = performance.now();
  if (size > 0) codecs.decodeWebp(codecs.encodeWebpLossless(cameraLikeFrame(size, size, 1), settings));
  const warm = performance.now() - t;
  const times: number[] = [];
  for (let i = 0; i < 6; i++) {
    const frame = cameraLikeFrame(640, 480, 100 + i);
    t = performance.now();
    codecs.encodeWebpLossless(frame, settings);
    times.push(performance.now() - t);
  }
  const [first, ...rest] = times;
  rest.sort((a, b) => a - b);
  console.log(JSON.stringify({ warm, first, steady: rest[2] }));
  process.exit(0);
}

export async function runWarmUpBench(
  log: (line: string) => void = console.log,
): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  log("| warm-up frame | warm-up ms | first 640×480 encode ms | steady encode ms | first ÷ steady |");
  log("|---|---|---|---|---|");
  for (const size of [0, 64, 160, 320, 640]) {
    const proc = Bun.spawn(["node_modules/.bin/bun", import.meta.path, "--child", String(size)], {
      cwd: root,
      stdout: "pipe",
    });
    killAtExit(proc);
    const r = JSON.parse(await new Response(proc.stdout).text()) as {
      warm: number;
      first: number;
      steady: number;
    };
    const name = size === 0 ? "none" : `${size}x${size}`;
    figures[`warm_up_${name}_ms`] = r.warm;
    figures[`warm_up_${name}_first_vs_steady_ratio`] = r.first / r.steady;
    log(
      `| ${name} | ${r.warm.toFixed(1)} | ${r.first.toFixed(1)} | ${r.steady.toFixed(1)} | ${(r.first / r.steady).toFixed(2)} |`,
    );
  }
  return figures;
}

if (import.meta.main) await runWarmUpBench();
