/**
 * A pool of conversion workers (config `images.workers`; default: the core count
 * minus one, at least one). A large frame converting in a worker no longer stalls
 * every other episode's exchanges and MCP callbacks. Jobs queue in order and each
 * idle worker takes the next. The codecs' WASM is compiled once, by the first worker,
 * and given to every other worker, so the one warm-up conversion before the sidecar
 * reports ready (the
 * first encode after loading costs ~8× a later one) warms them all, and a worker
 * started later (one that died, or replaced after sitting idle) starts warm. A worker
 * that dies fails its job and is replaced.
 *
 * The worker is its own entry point: `bun build --compile` must be given
 * src/images/conversion-worker.ts beside src/main.ts (Makefile `build`).
 */
import { availableParallelism } from "node:os";
import { workerUrl } from "../lib/worker-url.ts";
import type { ConversionModules } from "./codecs.ts";
import type { WorkerReply, WorkerRequest } from "./conversion-messages.ts";
import { PngDecodeError, type PngToWebp } from "./png-to-webp.ts";
import type { WebpSettings } from "./settings.ts";

/** Where the worker's code is (worker-url.ts). */
export function conversionWorkerUrl(): URL {
  return workerUrl("images/conversion-worker", import.meta.url);
}

export function defaultWorkerCount(): number {
  return Math.max(1, Math.min(8, availableParallelism() - 1));
}

/**
 * How long a worker that has converted something may sit idle before it is replaced by
 * a fresh one. A worker keeps the WASM memory its largest frame grew (the warm-up's
 * frame alone: ~12 MB) and its heap for as long as it lives; its replacement holds
 * neither, and runs the same already optimised code (the shared modules), so the next
 * frame pays only fresh pages. Long enough that a robot sending a frame every turn
 * keeps its worker.
 */
export const defaultIdleReplaceMs = 30_000;

type Job = {
  id: number;
  resolve: (reply: WorkerReply) => void;
  reject: (error: Error) => void;
};
type Queued = Job & { request: WorkerRequest };

type Slot = {
  worker: Worker;
  /** The job the worker is doing; its first is taking the compiled modules. */
  job: Job | undefined;
  /** Resolves with the worker's time to instantiate the codecs, once it has. */
  ready: Promise<number>;
  /** Has converted (or warmed up) since it started: it holds memory worth giving back. */
  used: boolean;
  idle: ReturnType<typeof setTimeout> | undefined;
};

/** The warm-up conversion's time, and each worker's time to instantiate its codecs (ms). */
export type WarmUpTimes = { warmUpMs: number; instantiateMs: number[] };

export type ConversionPool = PngToWebp & {
  readonly size: number;
  /**
   * One warm-up conversion, in whichever worker is free first: the code it makes hot is
   * every worker's. Resolves once it is done and every worker has its codecs.
   */
  warmUp(settings: WebpSettings): Promise<WarmUpTimes>;
  /** Workers replaced so far because they sat idle. */
  readonly idleReplacements: number;
  close(): Promise<void>;
};

export type ConversionPoolOptions = {
  /** See defaultIdleReplaceMs; 0 = never replace an idle worker. */
  idleReplaceMs?: number;
  /** The compiled codecs to hand the workers (default: the first worker compiles them from its embedded files). */
  modules?: Promise<ConversionModules>;
};

export function createConversionPool(
  size: number = defaultWorkerCount(),
  options: ConversionPoolOptions = {},
): ConversionPool {
  const { idleReplaceMs = defaultIdleReplaceMs } = options;
  // Compiled by the first worker, so that compiling and warming up overlap this thread's
  // own start-up (waiting for this thread to compile and post them left the worker idle
  // until start-up let go of the event loop); every other worker is given its modules.
  let compiled: { resolve(modules: ConversionModules): void; reject(error: Error): void } | undefined;
  const modules =
    options.modules ??
    new Promise<ConversionModules>((resolve, reject) => {
      compiled = { resolve, reject };
    });
  let compiling = false;
  const queue: Queued[] = [];
  let nextId = 1;
  let closed = false;
  let loadError: Error | undefined;
  let idleReplacements = 0;
  const workerUrl = conversionWorkerUrl();

  function spawn(): Slot {
    const worker = new Worker(workerUrl);
    const compiles = compiled !== undefined && !compiling;
    const init: Job = { id: nextId++, resolve: () => {}, reject: () => {} };
    const ready = new Promise<number>((resolve, reject) => {
      init.resolve = (reply) => {
        if (reply.kind === "ready") {
          if (compiles && reply.compiled) compiled?.resolve(reply.compiled);
          resolve(reply.ms);
          return;
        }
        const error = new Error(
          reply.kind === "failed" ? reply.message : "the worker did not load its codecs",
        );
        if (compiles) compiled?.reject(error);
        reject(error);
      };
      init.reject = (error) => {
        // The compiling worker died: its replacement compiles instead.
        if (compiles) compiling = false;
        reject(error);
      };
    });
    // Rejections are for warmUp to report; a later slot's are not awaited by anyone.
    ready.catch(() => {});
    const slot: Slot = { worker, job: init, ready, used: false, idle: undefined };
    worker.onmessage = (event: MessageEvent<WorkerReply>) => {
      const job = slot.job;
      slot.job = undefined;
      if (job && event.data.id === job.id) job.resolve(event.data);
      waitIdle(slot);
      dispatch();
    };
    worker.onerror = (event) => {
      const job = slot.job;
      slot.job = undefined;
      job?.reject(new Error(`image conversion worker failed: ${event.message}`));
      clearTimeout(slot.idle);
      worker.terminate();
      const at = slots.indexOf(slot);
      if (!closed && at >= 0) {
        slots[at] = spawn();
        dispatch();
      }
    };
    if (compiles) {
      compiling = true;
      worker.postMessage({ id: init.id, kind: "init" } satisfies WorkerRequest);
    } else
      modules.then(
        (given) => {
          if (!closed && slot.job === init)
            worker.postMessage({ id: init.id, kind: "init", modules: given } satisfies WorkerRequest);
        },
        () => {},
      );
    return slot;
  }
  const slots: Slot[] = Array.from({ length: Math.max(1, size) }, spawn);
  modules.catch((error: Error) => {
    loadError = new Error(`image codecs failed to load: ${error.message}`);
    for (const slot of slots) slot.job?.reject(loadError);
    for (const job of queue.splice(0)) job.reject(loadError);
  });

  function waitIdle(slot: Slot): void {
    clearTimeout(slot.idle);
    if (!slot.used || closed || idleReplaceMs <= 0) return;
    slot.idle = setTimeout(() => {
      const at = slots.indexOf(slot);
      if (closed || at < 0 || slot.job) return;
      slot.worker.terminate();
      idleReplacements += 1;
      slots[at] = spawn();
    }, idleReplaceMs);
    slot.idle.unref?.();
  }

  function dispatch(): void {
    for (const slot of slots) {
      if (slot.job) continue;
      const job = queue.shift();
      if (!job) return;
      clearTimeout(slot.idle);
      slot.job = job;
      slot.used = true;
      const transfer = job.request.kind === "convert" ? [job.request.png.buffer as ArrayBuffer] : [];
      slot.worker.postMessage(job.request, transfer);
    }
  }

  function submit(request: WorkerRequest, first = false): Promise<WorkerReply> {
    if (closed) return Promise.reject(new Error("the image conversion pool is closed"));
    if (loadError) return Promise.reject(loadError);
    return new Promise((resolve, reject) => {
      const job = { id: request.id, request, resolve, reject };
      if (first) queue.unshift(job);
      else queue.push(job);
      dispatch();
    });
  }

  return {
    size: slots.length,
    get idleReplacements() {
      return idleReplacements;
    },
    async convert(png, settings) {
      // The PNG's buffer moves to the worker: hand over a copy in a buffer of its own (a
      // Buffer's `slice` is a view, and may sit in Node's shared pool: never transfer that).
      const reply = await submit({ id: nextId++, kind: "convert", png: new Uint8Array(png), settings });
      if (reply.kind === "converted") return { webp: reply.webp, ms: reply.ms };
      if (reply.kind === "failed" && reply.stage === "decode") throw new PngDecodeError(reply.message);
      throw new Error(`image conversion failed: ${reply.kind === "failed" ? reply.message : reply.kind}`);
    },
    async warmUp(settings) {
      // Ahead of any frame already waiting: that frame then converts warm.
      const warmed = submit({ id: nextId++, kind: "warm_up", settings }, true).then((reply) => {
        if (reply.kind === "warmed") return reply.ms;
        throw new Error(`warm-up failed: ${reply.kind === "failed" ? reply.message : reply.kind}`);
      });
      const [warmUpMs, ...instantiateMs] = await Promise.all([warmed, ...slots.map((slot) => slot.ready)]);
      return { warmUpMs, instantiateMs };
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error("the image conversion pool is closed"));
      for (const slot of slots) {
        clearTimeout(slot.idle);
        slot.job?.reject(new Error("the image conversion pool is closed"));
        slot.worker.terminate();
      }
    },
  };
}
