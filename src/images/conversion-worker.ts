/**
 * A conversion worker (a Bun Worker started by conversion-pool.ts): its own WASM
 * codecs, so PNG decode and WebP encode never run on the event loop that serves
 * exchanges and MCP callbacks. Same codecs and settings as in process, so the
 * output is byte-identical. The handler is installed before the codecs finish
 * loading, so no message that arrives meanwhile is lost.
 */
import { loadConversionCodecs } from "./codecs.ts";
import type { WorkerReply, WorkerRequest } from "./conversion-messages.ts";
import { warmUpCodecs } from "./warm-up.ts";

declare const self: Worker;

const codecs = loadConversionCodecs();

function reply(message: WorkerReply, transfer: ArrayBuffer[] = []): void {
  self.postMessage(message, transfer);
}

self.onmessage = async (event: MessageEvent<WorkerRequest>) => {
  const request = event.data;
  try {
    const loaded = await codecs;
    if (request.kind === "warm_up") {
      reply({ id: request.id, kind: "warmed", ms: warmUpCodecs(loaded, request.settings) });
      return;
    }
    const started = performance.now();
    let image: ReturnType<typeof loaded.decodePng>;
    try {
      image = loaded.decodePng(request.png);
    } catch (error) {
      reply({ id: request.id, kind: "failed", stage: "decode", message: (error as Error).message });
      return;
    }
    const webp = loaded.encodeWebpLossless(image, request.settings);
    reply({ id: request.id, kind: "converted", webp, ms: performance.now() - started }, [
      webp.buffer as ArrayBuffer,
    ]);
  } catch (error) {
    reply({ id: request.id, kind: "failed", stage: "encode", message: (error as Error).message });
  }
};
