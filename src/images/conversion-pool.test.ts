import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { type Codecs, loadCodecs } from "./codecs.ts";
import { type ConversionPool, createConversionPool } from "./conversion-pool.ts";
import { rgbNoisePng } from "./generate-png.ts";
import { convertOnThisThread, PngDecodeError } from "./png-to-webp.ts";
import { webpSettingsSchema } from "./settings.ts";

const settings = webpSettingsSchema.parse({});
let pool: ConversionPool;
let codecs: Codecs;
// A camera-sized warm-up conversion: seconds on loaded shared cores, past the hook's default 5 s.
beforeAll(async () => {
  codecs = await loadCodecs();
  pool = createConversionPool(2);
  expect((await pool.warmUp(settings)).instantiateMs.length).toBe(2);
}, 60_000);
afterAll(() => pool.close());

describe("the conversion worker pool", () => {
  test("gives the same bytes as converting on this thread, for PNGs converted in parallel", async () => {
    const pngs = [1, 2, 3].map((seed) => rgbNoisePng(96, 64, seed).png);
    const inPool = await Promise.all(pngs.map((png) => pool.convert(png, settings)));
    const here = convertOnThisThread(codecs);
    for (const [i, png] of pngs.entries()) {
      expect(
        Buffer.from(inPool[i]?.webp ?? []).equals(Buffer.from((await here.convert(png, settings)).webp)),
      ).toBe(true);
    }
    // The caller's PNG stays usable (the worker got a copy), also when it is a view into
    // Node's shared Buffer pool, as small Buffer.from(base64) results are.
    const small = Buffer.from(Buffer.from(rgbNoisePng(8, 8, 5).png).toString("base64"), "base64");
    const neighbour = Buffer.from("abcd");
    const length = small.length;
    await pool.convert(small, settings);
    expect(small.length).toBe(length);
    expect(neighbour.toString()).toBe("abcd");
  });

  test("a PNG the decoder rejects is a PngDecodeError, and the worker goes on serving", async () => {
    const png = rgbNoisePng(16, 16, 9).png;
    const broken = png.slice(0, 60);
    await expect(pool.convert(broken, settings)).rejects.toBeInstanceOf(PngDecodeError);
    expect((await pool.convert(png, settings)).webp.length).toBeGreaterThan(0);
  });

  test("a large conversion does not stall this thread's event loop", async () => {
    const big = rgbNoisePng(2000, 1500, 4).png;
    let worstGap = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      worstGap = Math.max(worstGap, now - last);
      last = now;
    }, 5);
    const { ms } = await pool.convert(big, settings);
    clearInterval(timer);
    // The conversion itself takes far longer than any pause the timer saw.
    expect(ms).toBeGreaterThan(100);
    expect(worstGap).toBeLessThan(ms / 2);
    // A 3-megapixel noise frame takes seconds on loaded shared cores: the default 5 s timed out.
  }, 60_000);
});

describe("a worker that sat idle after converting", () => {
  const anonRssMb = () =>
    Number(/RssAnon:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1]) / 1024;

  test("is replaced by a fresh one that gives the same bytes; the memory its frame grew is given back", async () => {
    const idle = createConversionPool(1, { idleReplaceMs: 200 });
    try {
      await idle.warmUp(settings);
      const big = rgbNoisePng(2000, 1500, 4).png;
      const first = await idle.convert(big, settings);
      const grown = anonRssMb();
      await waitUntil(() => idle.idleReplacements === 1);
      // The old worker's thread and WASM memory go once the engine collects them.
      Bun.gc(true);
      await Bun.sleep(200);
      // Measured: ~175 MB for this 3-megapixel frame; its RGBA alone is 12 MB.
      expect(grown - anonRssMb()).toBeGreaterThan(24);
      const again = await idle.convert(big, settings);
      expect(Buffer.from(again.webp).equals(Buffer.from(first.webp))).toBe(true);
      expect(
        Buffer.from(first.webp).equals(
          Buffer.from((await convertOnThisThread(codecs).convert(big, settings)).webp),
        ),
      ).toBe(true);
      // A worker that has converted nothing since it started holds nothing to give back: it stays.
      await waitUntil(() => idle.idleReplacements === 2);
      await Bun.sleep(600);
      expect(idle.idleReplacements).toBe(2);
    } finally {
      await idle.close();
    }
  }, 60_000);
});

async function waitUntil(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await Bun.sleep(20);
  }
}

describe("codecs that do not load", () => {
  test("a compile that failed: the warm-up and every conversion reject with the reason, none waits forever", async () => {
    const broken = createConversionPool(2, { modules: Promise.reject(new Error("corrupt wasm")) });
    try {
      const png = rgbNoisePng(16, 16, 1).png;
      // One asked for before the compile failed, and the warm-up.
      const [early, warmUp] = await Promise.allSettled([
        broken.convert(png, settings),
        broken.warmUp(settings),
      ]);
      expect(early.status === "rejected" && String(early.reason)).toContain(
        "image codecs failed to load: corrupt wasm",
      );
      expect(warmUp.status === "rejected" && String(warmUp.reason)).toContain("corrupt wasm");
      await expect(broken.convert(png, settings)).rejects.toThrow(
        "image codecs failed to load: corrupt wasm",
      );
    } finally {
      await broken.close();
    }
  });

  test("modules the workers cannot instantiate: the warm-up and conversions fail, none waits forever", async () => {
    // A valid module with none of the codecs' exports.
    const empty = new WebAssembly.Module(new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]));
    const broken = createConversionPool(1, { modules: Promise.resolve({ png: empty, webpEncoder: empty }) });
    try {
      await expect(broken.warmUp(settings)).rejects.toThrow();
      await expect(broken.convert(rgbNoisePng(16, 16, 1).png, settings)).rejects.toThrow(
        "image conversion failed",
      );
    } finally {
      await broken.close();
    }
  });
});
