/**
 * The WASM image codecs (PNG decode, lossless WebP encode, WebP decode), initialised
 * once from `.wasm` files embedded with `with { type: "file" }`.
 *
 * Why not @jsquash's default loaders: inside a `bun build --compile` binary they look
 * for the `.wasm` next to the JS glue (`/$bunfs/root/...`) and fail
 * (docs/decisions/0004-lossless-webp-in-wasm.md). Importing each `.wasm` as a file
 * makes Bun embed it, and compiling it ourselves and handing the module to each
 * codec's init works both under `bun run` and in a compiled binary started from an
 * empty directory.
 *
 * All three calls are synchronous once loaded (a single WASM instance each, so calls
 * never interleave). The WebP encoder is libwebp 1.1.0's SIMD build.
 */
import { initSync as initPngSync, decode as pngDecode } from "@jsquash/png/codec/pkg/squoosh_png.js";
// @ts-expect-error squoosh_png_bg.wasm.d.ts types the WASM exports; as a file import the default is its path.
import pngWasmPath from "@jsquash/png/codec/pkg/squoosh_png_bg.wasm" with { type: "file" };
import webpDecFactory from "@jsquash/webp/codec/dec/webp_dec.js";
import webpDecWasmPath from "@jsquash/webp/codec/dec/webp_dec.wasm" with { type: "file" };
import webpEncFactory from "@jsquash/webp/codec/enc/webp_enc_simd.js";
import webpEncWasmPath from "@jsquash/webp/codec/enc/webp_enc_simd.wasm" with { type: "file" };
import { defaultOptions as webpDefaultOptions } from "@jsquash/webp/meta.js";
import type { WebpSettings } from "./settings.ts";

/** Decoded 8-bit RGBA pixels, row-major, 4 bytes per pixel (what ImageData holds). */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8Array | Uint8ClampedArray;
}

export interface Codecs {
  /** Decodes any 8-bit-or-less PNG (grey, palette, RGB, alpha, tRNS) to RGBA. Throws on corrupt data. */
  decodePng(bytes: Uint8Array): RgbaImage;
  /** Lossless (VP8L) WebP; `exact` keeps the RGB of fully transparent pixels. */
  encodeWebpLossless(image: RgbaImage, settings: WebpSettings): Uint8Array;
  /** Decodes a WebP to RGBA. Throws on corrupt data. */
  decodeWebp(bytes: Uint8Array): RgbaImage;
}

interface EmscriptenCodec {
  encode?(data: ArrayBufferView, width: number, height: number, options: object): Uint8Array | null;
  decode?(data: ArrayBufferView): RgbaImage | null;
}
type EmscriptenFactory = (options: object) => Promise<EmscriptenCodec>;

async function compileWasm(path: string): Promise<WebAssembly.Module> {
  return WebAssembly.compile(await Bun.file(path).arrayBuffer());
}

/** Instantiates an Emscripten codec from an already compiled module (never fetches anything). */
async function instantiateEmscripten(
  factory: EmscriptenFactory,
  module: WebAssembly.Module,
): Promise<EmscriptenCodec> {
  return factory({
    noInitialRun: true,
    instantiateWasm: (
      imports: ConstructorParameters<typeof WebAssembly.Instance>[1],
      receive: (instance: WebAssembly.Instance) => void,
    ) => {
      const instance = new WebAssembly.Instance(module, imports);
      receive(instance);
      return instance.exports;
    },
  });
}

/** What PNG → WebP conversion needs (a conversion worker loads only these, not the WebP decoder). */
export type ConversionCodecs = Pick<Codecs, "decodePng" | "encodeWebpLossless">;

/**
 * The conversion codecs' compiled WASM, compiled once per process and posted to every
 * conversion worker (a WebAssembly.Module crosses threads by structured clone). The
 * engine keeps a module's machine code with the module, optimised tiers included, so
 * an instance in a worker started later runs the code an earlier worker's encodes made
 * hot: one warm-up warms every worker, and a replaced worker starts warm.
 */
export type ConversionModules = { png: WebAssembly.Module; webpEncoder: WebAssembly.Module };

export async function compileConversionModules(): Promise<ConversionModules> {
  const [png, webpEncoder] = await Promise.all([compileWasm(pngWasmPath), compileWasm(webpEncWasmPath)]);
  return { png, webpEncoder };
}

export async function loadConversionCodecs(
  modules: ConversionModules | Promise<ConversionModules> = compileConversionModules(),
): Promise<ConversionCodecs> {
  const { png, webpEncoder } = await modules;
  // The PNG glue keeps one instance per thread: the first module it is given.
  initPngSync(png);
  const encoder = await instantiateEmscripten(webpEncFactory as unknown as EmscriptenFactory, webpEncoder);
  const encode = encoder.encode?.bind(encoder);
  if (!encode) throw new Error("WebP encoder WASM did not expose encode");
  return {
    decodePng(bytes) {
      const image = pngDecode(bytes);
      return { width: image.width, height: image.height, data: image.data };
    },
    encodeWebpLossless(image, settings) {
      const options = {
        ...webpDefaultOptions,
        lossless: 1,
        method: settings.method,
        quality: settings.quality,
        exact: settings.exact ? 1 : 0,
      };
      const out = encode(image.data, image.width, image.height, options);
      if (!out) throw new Error("WebP encoder returned no output");
      // Copy off the WASM heap if the view points into it.
      return new Uint8Array(out);
    },
  };
}

async function loadWebpDecoder(): Promise<Codecs["decodeWebp"]> {
  const decoder = await instantiateEmscripten(
    webpDecFactory as unknown as EmscriptenFactory,
    await compileWasm(webpDecWasmPath),
  );
  const decode = decoder.decode?.bind(decoder);
  if (!decode) throw new Error("WebP decoder WASM did not expose decode");
  return (bytes) => {
    const image = decode(bytes);
    if (!image) throw new Error("not a decodable WebP");
    return { width: image.width, height: image.height, data: image.data };
  };
}

export async function loadCodecs(): Promise<Codecs> {
  const [conversion, decodeWebp] = await Promise.all([loadConversionCodecs(), loadWebpDecoder()]);
  return { ...conversion, decodeWebp };
}

/** `loadCodecs` deferred to the first call; every later call gets the same codecs. */
export function loadCodecsOnFirstUse(): () => Promise<Codecs> {
  let loading: Promise<Codecs> | undefined;
  return () => {
    loading ??= loadCodecs();
    return loading;
  };
}
