/**
 * One encode of a real-sized frame at start-up: the first WebP encode after loading
 * the WASM costs ~200 ms (measured), later ones ~25 ms for the same 640×480 frame.
 * Only the encoder is warmed: conversion decodes PNGs (fast from the first frame) and
 * encodes WebP; nothing on the conversion path decodes WebP.
 */
import type { ConversionCodecs } from "./codecs.ts";
import type { WebpSettings } from "./settings.ts";
import { cameraLikeFrame } from "./synthetic-frames.ts";

/** Encodes a 640×480 noisy frame once; returns how long it took in ms. */
export function warmUpCodecs(
  codecs: Pick<ConversionCodecs, "encodeWebpLossless">,
  settings: WebpSettings,
): number {
  const started = performance.now();
  codecs.encodeWebpLossless(cameraLikeFrame(640, 480, 42), settings);
  return performance.now() - started;
}
