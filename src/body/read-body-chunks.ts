/**
 * Reads a request body from its stream chunk by chunk under two bounds: a byte
 * limit (body_limit_bytes), counted as the bytes arrive, so that a body without a
 * declared length (`transfer-encoding: chunked`) is refused as soon as it passes
 * the limit rather than once it has all arrived; and a signal (the body deadline)
 * that stops the reading. Either way the stream is cancelled: nothing more of the
 * body is read, let alone held.
 */

/** Thrown by the readers below once a body passed its limit; the rest of it is not read. */
export class BodyOverLimitError extends Error {
  constructor(readonly limitBytes: number) {
    super(`request body over the limit of ${limitBytes} bytes (body_limit_bytes)`);
  }
}

export type BodyReadBounds = {
  /** The most bytes the body may have. */
  limitBytes?: number;
  /** Stops reading (the promise then rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Told the size of each chunk taken: how a body that declared no length is sized. */
  onBytes?: (bytes: number) => void;
};

/**
 * The length a request declares for its body, when the runtime holds the body to
 * it: a content-length without transfer-encoding (Bun refuses a request with both).
 */
export function declaredBodyLength(request: Request): number | undefined {
  const declared = request.headers.get("content-length");
  if (declared === null || request.headers.has("transfer-encoding")) return undefined;
  const length = Number(declared);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/**
 * Hands each chunk of the stream to `take`, in order, until the body ends; when `take`
 * returns a promise, the next chunk is read once it settles (its consumer is behind).
 */
export async function readBodyChunks(
  stream: ReadableStream<Uint8Array>,
  bounds: BodyReadBounds,
  take: (chunk: Uint8Array) => void | Promise<void>,
): Promise<void> {
  const { limitBytes, signal, onBytes } = bounds;
  const reader = stream.getReader();
  const stop = () => void reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener("abort", stop, { once: true });
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      // A cancelled reader ends as if the body were complete.
      signal?.throwIfAborted();
      if (done) return;
      bytes += value.length;
      if (limitBytes !== undefined && bytes > limitBytes) {
        const error = new BodyOverLimitError(limitBytes);
        void reader.cancel(error).catch(() => {});
        throw error;
      }
      onBytes?.(value.length);
      const behind = take(value);
      if (behind) await behind;
    }
  } finally {
    signal?.removeEventListener("abort", stop);
  }
}

/** The whole body as text, decoded as `Request.text()` does (UTF-8, a leading BOM dropped). */
export async function readBodyText(
  stream: ReadableStream<Uint8Array>,
  bounds: BodyReadBounds,
): Promise<string> {
  const chunks: Uint8Array[] = [];
  await readBodyChunks(stream, bounds, (chunk) => {
    chunks.push(chunk);
    return undefined;
  });
  return new TextDecoder().decode(Buffer.concat(chunks));
}
