/**
 * SHA-256 of a request body's long strings in a worker thread (sha256-worker.ts), so that
 * hashing a camera history's frames (every frame, every turn: the identity their facts are
 * kept under, known-texts.ts) runs on the machine's other core while the body splitter
 * keeps scanning on the main thread. A chunk's buffer is handed over without a copy (the
 * request stream's chunks each own their buffer) and comes back with the digests of the
 * strings that ended in it, so the splitter still has a new frame's bytes.
 *
 * One worker serves every request, started at the first chunk with a long string and let
 * go after sitting idle (a camera sends a turn every few seconds; an idle worker holds its
 * heap). A worker that dies or fails fails every chunk it held with a retryable error
 * (`unavailable`: the client sends the request again); the next chunk starts a new worker.
 * The chunks it held are gone with it, so no digest can be had of them on this thread.
 * A worker that holds chunks and answers none for `stallMs` (a 128 KB chunk takes well
 * under a millisecond) is taken as failed too, so that no exchange waits on it for ever.
 */
import { errorMessage } from "./error-message.ts";
import { SidecarError } from "./errors.ts";
import { workerUrl } from "./worker-url.ts";

/** A piece of one string's bytes: a range of the chunk, or bytes of its own (copied out of an earlier chunk). */
export type HashPart = { id: number; from: number; to: number } | { id: number; bytes: Uint8Array };

export type HashRequest =
  | { kind: "hash"; seq: number; buffer: ArrayBuffer; parts: HashPart[]; ends: number[] }
  | { kind: "drop"; ids: number[] };

export type HashReply = { seq: number; buffer: ArrayBuffer; digests: [number, string][] };

/** A chunk back from the worker: its buffer, and the SHA-256 (hex) of each string that ended in it. */
export interface HashedChunk {
  readonly buffer: ArrayBuffer;
  readonly digests: readonly [number, string][];
}

export interface OffThreadSha256 {
  /** A new string's id (unique in the process): its parts are hashed in the order given. */
  nextId(): number;
  /**
   * Hands `buffer` to the worker (transferred: detached here until it comes back) to hash
   * `parts` into their strings, and then to end the strings `ends`. Rejects with a retryable
   * SidecarError when the worker fails.
   */
  hash(buffer: ArrayBuffer, parts: HashPart[], ends: number[]): Promise<HashedChunk>;
  /** Strings begun and never to be ended (their request was abandoned): the worker lets them go. */
  drop(ids: number[]): void;
  /** Workers started so far (the first, and any after one failed or sat idle). */
  readonly started: number;
  /** Stops the worker; chunks it holds fail. */
  close(): void;
}

/** How long the worker may sit idle before it is stopped (a new one starts at the next long string). */
const defaultHashIdleMs = 30_000;

/** How long the worker may hold chunks without answering any before it is taken as failed. */
const defaultHashStallMs = 15_000;

export function createOffThreadSha256(
  options: { url?: URL; idleMs?: number; stallMs?: number } = {},
): OffThreadSha256 {
  const url = options.url ?? workerUrl("lib/sha256-worker", import.meta.url);
  const idleMs = options.idleMs ?? defaultHashIdleMs;
  const stallMs = options.stallMs ?? defaultHashStallMs;
  const pending = new Map<number, { resolve(chunk: HashedChunk): void; reject(error: Error): void }>();
  let worker: Worker | undefined;
  let idle: ReturnType<typeof setTimeout> | undefined;
  let stall: ReturnType<typeof setTimeout> | undefined;
  let nextSeq = 1;
  let nextStringId = 1;
  let started = 0;

  const fail = (failed: Worker, why: string) => {
    if (worker !== failed) return;
    worker = undefined;
    clearTimeout(stall);
    failed.terminate();
    const error = new SidecarError(
      "unavailable",
      `hashing the request body's long strings failed (${why}); the request can be sent again`,
    );
    for (const job of pending.values()) job.reject(error);
    pending.clear();
  };

  const start = (): Worker => {
    const spawned = new Worker(url);
    started += 1;
    spawned.unref();
    spawned.onmessage = (event: MessageEvent<HashReply>) => {
      const job = pending.get(event.data.seq);
      pending.delete(event.data.seq);
      job?.resolve(event.data);
      watchStall(spawned);
      if (pending.size === 0) waitIdle();
    };
    spawned.onerror = (event) => fail(spawned, `the hashing worker failed: ${event.message}`);
    spawned.onmessageerror = () => fail(spawned, "a message from the hashing worker could not be read");
    spawned.addEventListener("close", () => fail(spawned, "the hashing worker stopped"));
    return spawned;
  };

  /** Armed while the worker holds chunks, from its last answer (or the first chunk since). */
  const watchStall = (watched: Worker) => {
    clearTimeout(stall);
    if (pending.size === 0) return;
    stall = setTimeout(() => fail(watched, `the hashing worker answered nothing for ${stallMs} ms`), stallMs);
    stall.unref?.();
  };

  const waitIdle = () => {
    clearTimeout(idle);
    if (idleMs <= 0) return;
    idle = setTimeout(() => {
      if (pending.size > 0 || worker === undefined) return;
      const stopping = worker;
      worker = undefined;
      stopping.terminate();
    }, idleMs);
    idle.unref?.();
  };

  return {
    nextId: () => nextStringId++,
    hash(buffer, parts, ends) {
      clearTimeout(idle);
      worker ??= start();
      const seq = nextSeq++;
      const reply = new Promise<HashedChunk>((resolve, reject) => pending.set(seq, { resolve, reject }));
      if (pending.size === 1) watchStall(worker);
      try {
        worker.postMessage({ kind: "hash", seq, buffer, parts, ends } satisfies HashRequest, [buffer]);
      } catch (error) {
        pending.delete(seq);
        return Promise.reject(
          new SidecarError("unavailable", `hashing the request body failed: ${errorMessage(error)}`),
        );
      }
      return reply;
    },
    drop(ids) {
      if (ids.length > 0) worker?.postMessage({ kind: "drop", ids } satisfies HashRequest);
    },
    get started() {
      return started;
    },
    close() {
      clearTimeout(idle);
      if (worker) fail(worker, "the sidecar is stopping");
    },
  };
}
