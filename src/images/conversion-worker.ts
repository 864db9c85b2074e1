/**
 * A conversion worker (a Bun Worker started by conversion-pool.ts): its own instances
 * of the WASM codecs, so PNG decode and WebP encode never run on the event loop that
 * serves exchanges and MCP callbacks. Same codecs and settings as in process, so the
 * output is byte-identical. Its first message brings the compiled modules, or asks it
 * to compile them (the pool's first worker: it compiles and warms up while the main
 * thread is still starting) and send them back for the other workers; the pool sends
 * nothing else before this worker answered it.
 */
import { errorMessage } from "../lib/error-message.ts";
import { type ConversionCodecs, compileConversionModules, loadConversionCodecs } from "./codecs.ts";
import type { WorkerReply, WorkerRequest } from "./conversion-messages.ts";
import { warmUpCodecs } from "./warm-up.ts";

declare const self: Worker;

let codecs: Promise<ConversionCodecs> | undefined;

function reply(message: WorkerReply, transfer: ArrayBuffer[] = []): void {
  self.postMessage(message, transfer);
}

self.onmessage = async (event: MessageEvent<WorkerRequest>) => {
  const request = event.data;
  if (request.kind === "init") {
    const started = performance.now();
    const modules = request.modules ?? compileConversionModules();
    codecs = loadConversionCodecs(modules);
    try {
      await codecs;
      const compiled = request.modules ? undefined : await modules;
      reply({ id: request.id, kind: "ready", ms: performance.now() - started, compiled });
    } catch (error) {
      reply({ id: request.id, kind: "failed", stage: "load", message: errorMessage(error) });
    }
    return;
  }
  try {
    if (!codecs) throw new Error("the worker was given no codecs");
    const loaded = await codecs;
    if (request.kind === "warm_up") {
      reply({ id: request.id, kind: "warmed", ms: await warmUpCodecs(loaded, request.settings) });
      return;
    }
    const started = performance.now();
    let image: ReturnType<typeof loaded.decodePng>;
    try {
      image = loaded.decodePng(request.png);
    } catch (error) {
      reply({ id: request.id, kind: "failed", stage: "decode", message: errorMessage(error) });
      return;
    }
    const webp = loaded.encodeWebpLossless(image, request.settings);
    reply({ id: request.id, kind: "converted", webp, ms: performance.now() - started }, [
      webp.buffer as ArrayBuffer,
    ]);
  } catch (error) {
    reply({ id: request.id, kind: "failed", stage: "encode", message: errorMessage(error) });
  }
};
