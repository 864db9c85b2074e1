/**
 * How a model route gets its request body: split while it arrived (split-json-bytes.ts),
 * so that a camera history is never one buffer or one string. Its route group's body
 * receiver (receive-bodies.ts) reads it under body_limit_bytes and the body deadline
 * and hands it on in the request's context; a body it did not read (a route mounted
 * without the app) is read and split when the route asks.
 */
import type { Context } from "hono";
import type { KnownTexts } from "../lib/known-texts.ts";
import type { BodyEnv } from "./body-variables.ts";
import { sharingFromChars } from "./parse-sharing-base64.ts";
import { type BodyReadBounds, declaredBodyLength } from "./read-body-chunks.ts";
import { readSplitJson } from "./split-json-bytes.ts";
import { type SplitText, unsplit } from "./split-text.ts";

/** Bodies under this size are kept whole: splitting them saves little and costs a slower parse. */
export const splitFromBytes = sharingFromChars;

/**
 * Reads a model request's body from its stream chunk by chunk: the runtime never
 * buffers the whole body (readSplitJson), and a body without a declared length is
 * held to `bounds.limitBytes` while it arrives. A body declared smaller than what is
 * split comes back whole anyway, so the runtime reads it at once: scanning it in
 * JavaScript first cost ~0.5 ms of CPU on Claude Code's 77 KB request.
 * `knownTexts`: the long strings are registered with their facts (known-texts.ts) under
 * the split's hold, which the caller releases once the request is done.
 */
export async function readModelBody(
  request: Request,
  bounds: BodyReadBounds & { knownTexts?: KnownTexts } = {},
): Promise<SplitText> {
  if (!request.body) return unsplit("");
  if ((declaredBodyLength(request) ?? Number.POSITIVE_INFINITY) < splitFromBytes)
    return unsplit(await request.text());
  return readSplitJson(request.body, { keepWholeUnder: splitFromBytes, ...bounds });
}

/** The request's body, split; each request's body is read once (the context lets go of it). */
export async function receivedBody(c: Context<BodyEnv>): Promise<SplitText> {
  const body = c.get("splitBody");
  if (body === undefined) return readModelBody(c.req.raw);
  c.set("splitBody", undefined);
  return body;
}
