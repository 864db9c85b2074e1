/**
 * A pool of conversion workers (config `images.workers`; default: the core count
 * minus one, at least one). A large frame converting in a worker no longer stalls
 * every other episode's exchanges and MCP callbacks. Jobs queue in order and each
 * idle worker takes the next; every worker is warmed up with a real-sized frame
 * before the sidecar reports ready (the first encode after loading costs ~8× a
 * later one). A worker that dies fails its job and is replaced.
 *
 * The worker is its own entry point: `bun build --compile` must be given
 * src/images/conversion-worker.ts beside src/main.ts (Makefile `build`).
 */
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import type { WorkerReply, WorkerRequest } from "./conversion-messages.ts";
import { PngDecodeError, type PngToWebp } from "./png-to-webp.ts";
import type { WebpSettings } from "./settings.ts";

/**
 * Where the worker's code is. In a compiled binary each entry point keeps its path
 * below the build's common root in the binary's own file system (`images/…` when the
 * entries are under src/, as in the Makefile; `src/images/…` when an entry sits at the
 * repository root, as in tests). Looked for first, by file: a `--bytecode` build
 * reports the source file's path as `import.meta.url`, so the URL cannot tell. Under
 * `bun run`, beside this module.
 */
export function conversionWorkerUrl(): URL {
  const embedded = "/$bunfs/root/";
  const inBinary = ["images/conversion-worker.js", "src/images/conversion-worker.js"].find((path) =>
    existsSync(`${embedded}${path}`),
  );
  if (inBinary) return new URL(`file://${embedded}${inBinary}`);
  if (import.meta.url.startsWith(`file://${embedded}`))
    throw new Error("the image conversion worker is not in this binary (build it as an entry point)");
  return new URL("./conversion-worker.ts", import.meta.url);
}

export function defaultWorkerCount(): number {
  return Math.max(1, Math.min(8, availableParallelism() - 1));
}

type Job = {
  request: WorkerRequest;
  resolve: (reply: WorkerReply) => void;
  reject: (error: Error) => void;
};

type Slot = { worker: Worker; job: Job | undefined };

export type ConversionPool = PngToWebp & {
  readonly size: number;
  /** One warm-up encode in every worker; resolves with each worker's time in ms. */
  warmUp(settings: WebpSettings): Promise<number[]>;
  close(): Promise<void>;
};

export function createConversionPool(size: number = defaultWorkerCount()): ConversionPool {
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;
  const workerUrl = conversionWorkerUrl();

  function spawn(): Slot {
    const slot: Slot = { worker: new Worker(workerUrl), job: undefined };
    slot.worker.onmessage = (event: MessageEvent<WorkerReply>) => {
      const job = slot.job;
      slot.job = undefined;
      if (job && event.data.id === job.request.id) job.resolve(event.data);
      dispatch();
    };
    slot.worker.onerror = (event) => {
      const job = slot.job;
      slot.job = undefined;
      job?.reject(new Error(`image conversion worker failed: ${event.message}`));
      slot.worker.terminate();
      if (!closed) {
        slots[slots.indexOf(slot)] = spawn();
        dispatch();
      }
    };
    return slot;
  }
  const slots: Slot[] = Array.from({ length: Math.max(1, size) }, spawn);

  function dispatch(): void {
    for (const slot of slots) {
      if (slot.job) continue;
      const job = queue.shift();
      if (!job) return;
      slot.job = job;
      const transfer = job.request.kind === "convert" ? [job.request.png.buffer as ArrayBuffer] : [];
      slot.worker.postMessage(job.request, transfer);
    }
  }

  function submit(request: WorkerRequest): Promise<WorkerReply> {
    if (closed) return Promise.reject(new Error("the image conversion pool is closed"));
    return new Promise((resolve, reject) => {
      queue.push({ request, resolve, reject });
      dispatch();
    });
  }

  return {
    size: slots.length,
    async convert(png, settings) {
      // The PNG's buffer moves to the worker: hand over a copy in a buffer of its own (a
      // Buffer's `slice` is a view, and may sit in Node's shared pool: never transfer that).
      const reply = await submit({ id: nextId++, kind: "convert", png: new Uint8Array(png), settings });
      if (reply.kind === "converted") return { webp: reply.webp, ms: reply.ms };
      if (reply.kind === "failed" && reply.stage === "decode") throw new PngDecodeError(reply.message);
      throw new Error(`image conversion failed: ${reply.kind === "failed" ? reply.message : reply.kind}`);
    },
    async warmUp(settings) {
      // Straight to each worker (not through the queue), so every one of them is warmed.
      return Promise.all(
        slots.map(
          (slot) =>
            new Promise<number>((resolve, reject) => {
              const request: WorkerRequest = { id: nextId++, kind: "warm_up", settings };
              const job: Job = {
                request,
                resolve: (reply) =>
                  reply.kind === "warmed" ? resolve(reply.ms) : reject(new Error("warm-up failed")),
                reject,
              };
              if (slot.job) queue.unshift(job);
              else {
                slot.job = job;
                slot.worker.postMessage(request);
              }
            }),
        ),
      );
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error("the image conversion pool is closed"));
      for (const slot of slots) {
        slot.job?.reject(new Error("the image conversion pool is closed"));
        slot.worker.terminate();
      }
    },
  };
}
