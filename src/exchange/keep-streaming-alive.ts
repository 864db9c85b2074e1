/**
 * Keeps a streaming client waiting while the sidecar waits on the upstream (the shared
 * queue, retry backoff, a slow answer). Every pinned client gives up on a request that
 * sends no byte for long enough (Gemini CLI: no response head within 60 s; docs/clients.md
 * has the table), re-sends it, and the answer in progress is lost and paid for twice.
 *
 * An exchange that has not settled `headAfterMs` after it started gets its response head
 * (200, text/event-stream) and bytes the client's parser ignores, once at once and then
 * every `everyMs`; when the exchange settles, its answer's frames follow unchanged. The
 * exchange itself runs exactly as without this: the whole answer is validated, its calls
 * registered and its records made durable before its first frame, so nothing is runnable
 * earlier. A failure after the head went out can no longer be an HTTP status: it ends the
 * stream in the form that client treats as a final error (no retry). An exchange that
 * settles before `headAfterMs` is answered as it always was, byte for byte.
 *
 * The keepalive bytes are not part of the answer: the `delivered` record holds the
 * answer's frames only, and the exchange's lines say how many keepalives went before
 * them (docs/records.md).
 */

import type { JsonBody } from "../body/parse-json-body.ts";
import type { Protocol } from "../hub/protocol.ts";
import type { SidecarError } from "../lib/errors.ts";

export type KeepAliveTiming = {
  /** How long an exchange may take before the head and the first keepalive go out. */
  headAfterMs: number;
  /** The interval of the keepalives after the first. */
  everyMs: number;
};

/** What one protocol's clients accept and ignore, and how they take a final error mid-stream. */
export type StreamForm = {
  contentType: string;
  keepalive: string;
  /** The error answer (status and envelope the route rendered) as the end of an open stream. */
  inStreamError: (status: number, envelope: string) => string;
};

const sseEvent = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

function parseEnvelope(envelope: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(envelope);
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export const streamForms: Record<Protocol, StreamForm> = {
  // Anthropic's own keepalive is `event: ping`; its SDK skips it, and Claude Code's byte
  // watchdog counts it. `event: error` with the error envelope ends the stream as an
  // APIError of that type; invalid_request_error is not retried.
  messages: {
    contentType: "text/event-stream; charset=utf-8",
    keepalive: sseEvent("ping", { type: "ping" }),
    inStreamError: (_status, envelope) => `event: error\ndata: ${envelope}\n\n`,
  },
  // @google/genai reads `data:` lines after optional whitespace (/^\s*data: /), so a
  // newline is skipped; an SSE comment would stall its parser. A chunk that is a JSON
  // error object {error:{code,…}} is thrown as an ApiError with that code: 400 is final.
  gemini: {
    contentType: "text/event-stream",
    keepalive: "\n",
    inStreamError: (_status, envelope) => `${envelope}\n`,
  },
  // Codex's idle timer counts SSE events (comments do not reset it) and ignores event
  // types it does not know; the AI SDK's Responses parser (OpenCode) ignores them too.
  // The failure: an `error` event (the AI SDK's stream error) and `response.failed`
  // (Codex's), both with the envelope's code and message; the AI SDK reads neither
  // without its `sequence_number` (the keepalives before them carry none).
  responses: {
    contentType: "text/event-stream; charset=utf-8",
    keepalive: sseEvent("keepalive", { type: "keepalive" }),
    inStreamError: (_status, envelope) => {
      const error = (parseEnvelope(envelope).error ?? {}) as Record<string, unknown>;
      const code = typeof error.code === "string" ? error.code : "invalid_request_error";
      const message = typeof error.message === "string" ? error.message : envelope;
      return (
        sseEvent("error", { type: "error", code, message, param: error.param ?? null, sequence_number: 0 }) +
        sseEvent("response.failed", {
          type: "response.failed",
          sequence_number: 1,
          response: { object: "response", status: "failed", error: { code, message }, output: [] },
        })
      );
    },
  },
};

/** A Responses or Messages request that asks for a stream (`"stream": true`). */
export function asksForStream(body: JsonBody): boolean {
  if (!body.parsed || typeof body.value !== "object" || body.value === null) return false;
  return (body.value as { stream?: unknown }).stream === true;
}

export type KeepAliveOutcome = {
  /** Keepalives sent before the answer (or the error). */
  keepalives: number;
  /** The client closed the stream: a failure now is told to nobody. */
  clientLeft: boolean;
};

export type KeepAliveOptions = {
  /** The exchange's answer, as it would be sent without keepalives. */
  answer: Promise<Response>;
  form: StreamForm;
  timing: KeepAliveTiming;
  /** Renders an unexpected failure of the exchange in the route's envelope. */
  renderError: (error: SidecarError) => Response;
  toSidecarError: (error: unknown) => SidecarError;
  /** Called once the head is about to go out (the exchange's failure is then told in-stream). */
  headSent: (state: KeepAliveOutcome) => void;
};

/** Resolves to the answer itself when it comes before `headAfterMs`, else to a kept-alive stream. */
export async function keepStreamingAlive(options: KeepAliveOptions): Promise<Response> {
  const { answer, form, timing } = options;
  const settled = answer.catch((error: unknown) => options.renderError(options.toSidecarError(error)));
  const wait = Promise.withResolvers<undefined>();
  const waitTimer = setTimeout(() => wait.resolve(undefined), timing.headAfterMs);
  const early = await Promise.race([settled, wait.promise]);
  clearTimeout(waitTimer);
  if (early !== undefined) return early;

  const state: KeepAliveOutcome = { keepalives: 0, clientLeft: false };
  options.headSent(state);
  const encoder = new TextEncoder();
  let interval: ReturnType<typeof setInterval> | undefined;
  let reader:
    | { read: () => Promise<{ done: boolean; value?: unknown }>; cancel: (reason?: unknown) => Promise<void> }
    | undefined;
  let cancelled = false;
  const stop = () => clearInterval(interval);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const beat = () => {
        state.keepalives += 1;
        controller.enqueue(encoder.encode(form.keepalive));
      };
      beat();
      interval = setInterval(beat, timing.everyMs);
    },
    async pull(controller) {
      if (reader === undefined) {
        const response = await settled;
        stop();
        if (cancelled) {
          await response.body?.cancel("client went away").catch(() => {});
          return;
        }
        if (!response.ok) {
          controller.enqueue(encoder.encode(form.inStreamError(response.status, await response.text())));
          controller.close();
          return;
        }
        if (response.body === null) {
          controller.close();
          return;
        }
        reader = response.body.getReader();
      }
      if (reader === undefined) return;
      // One frame of the answer per pull, as the answer's own stream hands them out:
      // it counts as delivered only once its last frame was taken.
      const next = await reader.read();
      if (next.done) controller.close();
      else controller.enqueue(next.value as Uint8Array);
    },
    async cancel(reason) {
      cancelled = true;
      state.clientLeft = true;
      stop();
      if (reader) await reader.cancel(reason).catch(() => {});
      else
        void settled.then((response) => response.body?.cancel(reason ?? "client went away").catch(() => {}));
    },
  });
  return new Response(stream, {
    status: 200,
    headers: { "content-type": form.contentType, "cache-control": "no-cache" },
  });
}
