/**
 * Receives a request's whole body before its route runs, in one reader held to
 * both bounds at once: `body_limit_bytes`, counted while the body arrives, and the
 * body deadline (`server.body_timeout_seconds`, when Bun serves the app). So a body
 * sent with `transfer-encoding: chunked` meets the same limit and the same deadline
 * as one with a content-length: a declared length over the limit is refused before
 * any of the body is read, an undeclared one as soon as it passes the limit, and
 * either way reading stops. A model route's body is split while it arrives
 * (received-body.ts), never one buffer; any other is read as text.
 * The size of each body received in full comes back with it: what
 * body_bytes_in_flight and the memory reclaimer count, since a chunked camera
 * history declares no length.
 */

import { SidecarError } from "../lib/errors.ts";
import type { KnownTexts } from "../lib/known-texts.ts";
import {
  BodyOverLimitError,
  type BodyReadBounds,
  declaredBodyLength,
  readBodyText,
} from "./read-body-chunks.ts";
import { readModelBody } from "./received-body.ts";
import type { SplitText } from "./split-text.ts";

export type ReceivedBody =
  | { kind: "complete"; bytes: number; text: string; split?: undefined }
  | { kind: "complete"; bytes: number; split: SplitText }
  | { kind: "timeout" }
  | { kind: "closed" }
  | { kind: "over_limit" }
  /** Received, but its processing failed (the hashing worker failed: a retryable error). */
  | { kind: "failed"; error: SidecarError };

export async function receiveBody(
  request: Request,
  options: {
    /** Whether the body is a model request's, taken split. */
    split: boolean;
    /** Where a split body's long strings are registered with their facts (known-texts.ts). */
    knownTexts?: KnownTexts;
    limitBytes: number;
    /** From now until the last body byte; none when no server serves the app (app.request()). */
    deadlineMs?: number;
    /** Told the bytes of each piece of the body as it arrives (the memory reclaimer's bodyReceived). */
    onBytes?: (bytes: number) => void;
  },
): Promise<ReceivedBody> {
  const declared = declaredBodyLength(request);
  if (declared !== undefined && declared > options.limitBytes) return { kind: "over_limit" };
  const stop = new AbortController();
  // A body without a declared length is counted as it arrives; a declared length is the body's
  // size (the runtime holds the body to it, and reads it at once where it can).
  let counted = 0;
  const bounds: BodyReadBounds = {
    limitBytes: options.limitBytes,
    signal: stop.signal,
    onBytes: (bytes) => {
      counted += bytes;
      options.onBytes?.(bytes);
    },
  };
  const reading: Promise<ReceivedBody> = options.split
    ? readModelBody(request, {
        ...bounds,
        ...(options.knownTexts ? { knownTexts: options.knownTexts } : {}),
      }).then((split) => ({
        kind: "complete",
        bytes: declared ?? counted,
        split,
      }))
    : readText(request, bounds).then((text) => ({ kind: "complete", bytes: declared ?? counted, text }));
  const body = reading.catch(
    (error): ReceivedBody =>
      error instanceof BodyOverLimitError
        ? { kind: "over_limit" }
        : error instanceof SidecarError
          ? { kind: "failed", error }
          : { kind: "closed" },
  );
  if (options.deadlineMs === undefined) return body;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<ReceivedBody>((resolve) => {
    timer = setTimeout(() => {
      // A body that keeps trickling in is no longer read, nor held.
      stop.abort(new Error("body deadline passed"));
      resolve({ kind: "timeout" });
    }, options.deadlineMs);
  });
  try {
    return await Promise.race([body, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** A body of declared length (within the limit already) is read by the runtime at once. */
function readText(request: Request, bounds: BodyReadBounds): Promise<string> {
  if (!request.body || declaredBodyLength(request) !== undefined) return request.text();
  return readBodyText(request.body, bounds);
}
