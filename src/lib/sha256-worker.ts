/**
 * The body hashing worker (a Bun Worker started by sha256-off-thread.ts): computes the
 * SHA-256 of a request's long strings from the chunks their bytes arrived in, so that
 * the main thread keeps scanning the body meanwhile. Each message brings one chunk's
 * buffer (transferred, not copied) with the ranges of strings in it, in order; the
 * buffer goes back, transferred again, with the digests of the strings that ended in
 * that chunk: the main thread still needs a new frame's bytes.
 */
import type { HashReply, HashRequest } from "./sha256-off-thread.ts";

declare const self: Worker;

/** The running hash of each string begun and not yet ended or dropped. */
const open = new Map<number, Bun.CryptoHasher>();

function hasherOf(id: number): Bun.CryptoHasher {
  let hasher = open.get(id);
  if (hasher === undefined) {
    hasher = new Bun.CryptoHasher("sha256");
    open.set(id, hasher);
  }
  return hasher;
}

self.onmessage = (event: MessageEvent<HashRequest>) => {
  const request = event.data;
  if (request.kind === "drop") {
    for (const id of request.ids) open.delete(id);
    return;
  }
  const chunk = new Uint8Array(request.buffer);
  for (const part of request.parts) {
    const bytes = "bytes" in part ? part.bytes : chunk.subarray(part.from, part.to);
    hasherOf(part.id).update(bytes);
  }
  const digests: [number, string][] = [];
  for (const id of request.ends) {
    digests.push([id, hasherOf(id).digest("hex")]);
    open.delete(id);
  }
  self.postMessage({ seq: request.seq, buffer: request.buffer, digests } satisfies HashReply, [
    request.buffer,
  ]);
};
