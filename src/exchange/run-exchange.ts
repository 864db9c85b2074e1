/**
 * One model exchange, the same for every ingress:
 * translate → context → images → upstream (buffered, validated) → register tool
 * calls in the ledger → render for the client → mark delivered after the last
 * byte was handed to the socket, or revoke if the client went away.
 * Every stage is recorded; every failure is rendered in the client's envelope.
 */
import { applyContextPolicy, type ContextDecision, contextFailureRecord } from "../context/apply-context.ts";
import type { Episode } from "../episodes/episode.ts";
import type { Protocol } from "../hub/protocol.ts";
import type { HubRequest, HubResponse } from "../hub/schema.ts";
import { createImageConverter } from "../images/convert-request.ts";
import type { ImageCache } from "../images/image-cache.ts";
import type { PngToWebp } from "../images/png-to-webp.ts";
import type { WebpSettings } from "../images/settings.ts";
import type { SizeLimits } from "../images/size-guard.ts";
import { checkImageSizes, checkUpstreamSize } from "../images/size-guard.ts";
import { SidecarError, toSidecarError } from "../lib/errors.ts";
import { linkSignals } from "../lib/link-signals.ts";
import type { Logger } from "../lib/logger.ts";
import type { JsonBody } from "../lib/parse-json-body.ts";
import { wholeText } from "../lib/split-text.ts";
import type { ModelCatalog } from "../models/model-catalog.ts";
import { RecordsWriteError } from "../records/append-file.ts";
import type { DataDirBudget } from "../records/data-dir-budget.ts";
import type { buildChatRequest } from "../upstream/build-chat-request.ts";
import {
  type UpstreamAttempt,
  UpstreamCancelled,
  type UpstreamClient,
  UpstreamFailure,
} from "../upstream/upstream-client.ts";
import { buildUpstreamBody } from "./build-upstream-body.ts";

export type { Protocol };

/** A rendered answer: whole frames (SSE) or one JSON document, each written in one piece. */
export type Rendered = { contentType: string; chunks: string[] };

/** A client request translated (an ingress's `toHub`): the hub request, and how to render the answer to it. */
export type Translation = {
  hub: HubRequest;
  render: (response: HubResponse) => Rendered;
  /** Told once whether the rendered answer was fully delivered or revoked — also when it failed before delivery (e.g. to store it). */
  settled?: (outcome: "delivered" | "revoked") => void;
};

export type ExchangeDeps = {
  upstream: UpstreamClient;
  /** The data directory's bound (records.max_bytes); none = unbounded. */
  recordsBudget?: Pick<DataDirBudget, "checkNewExchange">;
  /** PNG → WebP (the worker pool) and the process-wide cache of converted images. */
  images: { converter: PngToWebp; settings: WebpSettings; cache: ImageCache };
  sizeLimits: SizeLimits;
  /** Each episode's model capabilities: the max_tokens clamp and whether images may go upstream. */
  models: ModelCatalog;
  parallelToolCalls: boolean;
  logger: Logger;
  /** Aborted when the sidecar shuts down: cancels upstream requests and retry waits. */
  shutdownSignal: AbortSignal;
  /**
   * Removes every configured secret from what is sent to the client (an upstream may
   * echo its bearer in an error message or an answer), as from logs and records.
   */
  redact: (text: string) => string;
};

export type ExchangeSpec = {
  protocol: Protocol;
  episode: Episode;
  path: string;
  /** The client's request exactly as received. */
  clientRequest: JsonBody;
  /** Client → hub; throws SidecarError naming the field (or refusing the request). */
  translate: () => Translation;
  renderError: (error: SidecarError) => Response;
  /** The client's request signal: a client that leaves cancels the upstream work. */
  clientSignal: AbortSignal;
};

const encoder = new TextEncoder();

/** Upstream failures end the episode's model work: an outer CLI retry must not create more. */
function isProviderFailure(error: SidecarError): boolean {
  return error.kind.startsWith("upstream_") || error.episodeFatal;
}

export async function runExchange(deps: ExchangeDeps, spec: ExchangeSpec): Promise<Response> {
  const { episode } = spec;
  const exchangeId = episode.nextExchangeId();
  const log = deps.logger.child({ episode: episode.id, exchange: exchangeId, protocol: spec.protocol });
  // Over the data directory's bound the exchange is refused; its record says so, without the body.
  let overBudget: SidecarError | undefined;
  try {
    deps.recordsBudget?.checkNewExchange();
  } catch (error) {
    overBudget = toSidecarError(error);
  }
  try {
    const received = spec.clientRequest;
    // Kept byte for byte: valid single-line JSON spliced in as `body` (not serialised
    // again: with image histories it is megabytes, and it stays split so that it is never
    // one text), any other text as the string `body_text`. Taken-out strings are base64: no newline.
    // (includes: a regular expression took ~4× as long over a large body)
    const { reduced } = received.received;
    const verbatim = received.parsed && !reduced.includes("\n") && !reduced.includes("\r");
    episode.records.clientRequest(
      exchangeId,
      {
        protocol: spec.protocol,
        path: spec.path,
        ...(overBudget ? { body_omitted: "records.max_bytes" as const } : {}),
      },
      overBudget
        ? undefined
        : verbatim
          ? { json: { split: received.received, known: (received.parsed && received.known) || [] } }
          : { text: wholeText(received.received) },
    );
  } catch (error) {
    // No record, no exchange: nothing goes upstream for a request we could not record.
    log.error("cannot record the client request; exchange refused", { message: (error as Error).message });
    return spec.renderError(redactError(exchangeError(error), deps.redact));
  }

  let holdsTurn = false;
  const fail = (error: SidecarError, extra: { context_decision?: ContextDecision } = {}): Response => {
    episode.exchangeFailed({
      heldTurn: holdsTurn,
      ...(isProviderFailure(error) ? { providerError: error.message } : {}),
    });
    holdsTurn = false;
    const answer = finalOnceEnded(error, episode);
    try {
      episode.records.status(exchangeId, {
        status: "failed",
        error: {
          kind: error.kind,
          message: error.message,
          param: error.param ?? null,
          http_status: answer.status,
        },
        episode_state: episode.state,
        ...extra,
      });
    } catch (recordsError) {
      // The exchange fails anyway; the records failure is in the episode's status.
      log.error("cannot record the exchange's failure", { message: (recordsError as Error).message });
    }
    log.warn("exchange failed", { kind: error.kind, status: answer.status, message: error.message });
    return spec.renderError(redactError(answer, deps.redact));
  };

  if (overBudget) {
    log.error("data directory over records.max_bytes; exchange refused", { message: overBudget.message });
    return fail(overBudget);
  }
  const closed = episode.closedReason();
  if (closed) {
    if (episode.state === "running") episode.fail("max_turns", closed);
    return fail(new SidecarError("episode_closed", closed));
  }
  if (!episode.reserveTurn()) {
    return fail(
      new SidecarError(
        "episode_closed",
        `episode ${episode.id} has all of its max_turns (${episode.maxTurns}) delivered or held by exchanges in flight; this exchange is not run`,
      ),
    );
  }
  holdsTurn = true;

  let translation: Translation;
  let upstreamRequest: ReturnType<typeof buildChatRequest>;
  let upstreamBody: string;
  try {
    translation = spec.translate();
    const { hub } = translation;
    const model = deps.models.resolve(episode.model);
    if (!model.ok) throw new SidecarError("invalid_request", model.problem, { param: "model" });
    const {
      request: filtered,
      decision,
      stale,
      cut,
    } = applyContextPolicy(hub, episode.context, episode.contextMemory.previous);
    if (cut) episode.contextMemory.previous = cut;
    // The translated request is kept only when the policy changed it; otherwise the
    // upstream_request line already shows it, and writing it twice doubled the cost.
    episode.records.afterContext(exchangeId, {
      request: filtered === hub ? "identical to the translated request" : filtered,
      ...(filtered === hub ? {} : { translated: hub }),
      decision,
    });
    const upstream = await buildUpstreamBody(filtered, episode.context, decision, {
      target: {
        model: episode.model,
        imageInput: model.capabilities.image_input,
        parallelToolCalls: deps.parallelToolCalls,
        maxOutputTokens: model.capabilities.max_output_tokens,
      },
      providerLimitBytes: deps.sizeLimits.max_request_bytes,
      stale,
      memory: episode.contextMemory,
      images: createImageConverter({
        ...deps.images,
        maxPixels: deps.sizeLimits.max_image_pixels,
        owner: episode.id,
      }),
    });
    const converted = upstream.request;
    upstreamRequest = upstream.chat;
    if (converted.maxOutputTokens !== undefined && upstreamRequest.max_tokens !== converted.maxOutputTokens) {
      hub.ignored.push(
        `max_output_tokens ${converted.maxOutputTokens} lowered to ${upstreamRequest.max_tokens} (max_output_tokens of model ${episode.model}: docs/models.md)`,
      );
    }
    const body = upstream.body;
    upstreamBody = body;
    checkImageSizes(upstream.request, deps.sizeLimits);
    checkUpstreamSize(body, deps.sizeLimits);
    // The body as sent, spliced in: stringifying it again doubled the cost of large (image) requests.
    episode.records.upstreamRequest(
      exchangeId,
      {
        images: upstream.stats,
        ignored: hub.ignored,
        ...(upstream.budget ? { context: upstream.budget } : {}),
      },
      { text: body, known: upstream.known },
    );
  } catch (error) {
    // A context failure (protected content over target) is recorded with its decision.
    return fail(exchangeError(error), contextFailureRecord(error));
  }

  const linked = linkSignals([episode.abortSignal, deps.shutdownSignal, spec.clientSignal]);
  const signal = linked.signal;
  let response: HubResponse;
  try {
    const exchange = await deps.upstream
      .complete(upstreamRequest, signal, { episodeId: episode.id, body: upstreamBody })
      .finally(linked.dispose);
    response = exchange.response;
    episode.records.upstreamResponse(exchangeId, {
      attempts: exchange.attempts,
      raw: exchange.rawResponse,
      validated: response,
    });
  } catch (error) {
    if (error instanceof RecordsWriteError) return fail(exchangeError(error));
    // Every attempt, cut or failed, is recorded: a failed exchange's and a cancelled one's too.
    const recordAttempts = (attempts: UpstreamAttempt[], raw: string | null, message: string) => {
      try {
        episode.records.upstreamResponse(exchangeId, { attempts, raw, error: message });
      } catch (recordsError) {
        log.error("cannot record the upstream failure", { message: (recordsError as Error).message });
      }
    };
    if (error instanceof UpstreamFailure) {
      recordAttempts(error.attempts, error.rawResponse ?? null, error.message);
      return fail(error);
    }
    if (signal.aborted) {
      const reason = deps.shutdownSignal.aborted
        ? "the sidecar is shutting down"
        : episode.abortSignal.aborted
          ? "the episode was cancelled"
          : "the client closed the request";
      const cancelled = new SidecarError(
        deps.shutdownSignal.aborted ? "unavailable" : "episode_closed",
        `upstream request cancelled: ${reason}`,
      );
      if (error instanceof UpstreamCancelled && error.attempts.length > 0)
        recordAttempts(error.attempts, null, cancelled.message);
      return fail(cancelled);
    }
    return fail(toSidecarError(error));
  }

  // The answer's fdatasync starts now, while the answer is rendered and its calls registered:
  // delivery waits only for what is left of it. Awaited below; settled here for the early returns.
  const answerDurable = episode.records.sync({ now: true });
  answerDurable.catch(() => {});
  let rendered: Rendered;
  let batchId: string | undefined;
  try {
    const raw = translation.render(response);
    rendered = { ...raw, chunks: raw.chunks.map(deps.redact) };
    episode.rememberArguments(response.toolCalls);
    const robotCalls = response.toolCalls.flatMap((call) => {
      const tool = episode.toolFor(call.name);
      return tool
        ? [
            {
              id: call.id,
              modelName: call.name,
              tool,
              args: JSON.parse(call.arguments) as Record<string, unknown>,
            },
          ]
        : [];
    });
    if (robotCalls.length > 0) {
      // The calls of one answer are one batch, named by its exchange.
      batchId = exchangeId;
      episode.ledger.register({ batchId, calls: robotCalls });
    }
  } catch (error) {
    translation.settled?.("revoked");
    return fail(exchangeError(error));
  }
  try {
    // What the model answered (and the calls registered) survive a power cut before any byte is delivered.
    await Promise.all([answerDurable, episode.records.sync()]);
  } catch (error) {
    if (batchId) revokeQuietly(episode, batchId, "its records could not be made durable", log);
    translation.settled?.("revoked");
    return fail(exchangeError(error));
  }

  return deliver(spec.episode, spec.clientSignal, exchangeId, rendered, batchId, log, translation.settled);
}

/**
 * Streams the rendered frames. Delivery is confirmed only once the last frame was
 * taken by the server for writing; a cancelled stream revokes the batch.
 *
 * Takes the episode and the client's signal, not the exchange spec: the server keeps
 * the answer stream's source (these closures) alive for a while after the last byte,
 * and through the spec they kept the whole received request (a camera history's ~80
 * MB at turn 100) from the collection that runs after the answer (docs/long-sessions.md).
 */
function deliver(
  episode: Episode,
  clientSignal: AbortSignal,
  exchangeId: string,
  rendered: Rendered,
  batchId: string | undefined,
  log: Logger,
  onSettled?: Translation["settled"],
): Response {
  let next = 0;
  let settled = false;
  // Shutdown waits for this delivery to settle, and revokes it if it never does (drain-episodes.ts).
  const { promise: settledPromise, resolve: resolveSettled } = Promise.withResolvers<void>();
  const revokeOnShutdown = (reason: string) => settle("revoked", reason);
  episode.deliveries.add(revokeOnShutdown);
  void episode.track(settledPromise);
  const settle = (outcome: "delivered" | "revoked", reason?: string) => {
    if (settled) return;
    settled = true;
    episode.deliveries.delete(revokeOnShutdown);
    clientSignal.removeEventListener("abort", onClientAbort);
    resolveSettled();
    let recorded = true;
    try {
      settleRecords(outcome, reason);
    } catch (error) {
      // Never thrown into the response stream: the failure is logged and in the episode's status.
      recorded = false;
      log.error("cannot record the delivery outcome", { outcome, message: (error as Error).message });
    }
    // A delivery whose record failed is not built upon (e.g. not continued as a stored response).
    const settledHook = onSettled;
    onSettled = undefined;
    settledHook?.(recorded ? outcome : "revoked");
  };
  const settleRecords = (outcome: "delivered" | "revoked", reason?: string) => {
    if (outcome === "delivered") {
      episode.exchangeDelivered(batchId);
      episode.records.delivered(exchangeId, { content_type: rendered.contentType }, rendered.chunks.join(""));
      episode.records.status(exchangeId, { status: "delivered", batch: batchId ?? null });
    } else {
      episode.exchangeRevoked(batchId);
      episode.records.status(exchangeId, {
        status: "revoked",
        reason: reason ?? "client went away",
        frames_sent: next,
        batch: batchId ?? null,
      });
      log.warn("delivery failed; calls revoked", { reason, batch: batchId });
    }
  };
  const closedByClient = "client closed the connection";
  // Removed once settled: the request's signal can outlive the exchange.
  const onClientAbort = () => settle("revoked", closedByClient);
  // A client that left while the answer was being prepared (upstream done, records synced) gets nothing.
  if (clientSignal.aborted) settle("revoked", closedByClient);
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const chunk = rendered.chunks[next];
      if (chunk === undefined) {
        controller.close();
        // "Delivered" = the last byte was handed to the server for the socket (docs/design.md);
        // a peer close noticed by then is a failed delivery.
        settle(clientSignal.aborted ? "revoked" : "delivered", closedByClient);
        return;
      }
      next += 1;
      controller.enqueue(encoder.encode(chunk));
    },
    cancel(reason) {
      settle("revoked", reason instanceof Error ? reason.message : String(reason ?? "client went away"));
    },
  });
  clientSignal.addEventListener("abort", onClientAbort, { once: true });
  return new Response(stream, {
    status: 200,
    headers: { "content-type": rendered.contentType, "cache-control": "no-cache" },
  });
}

/**
 * What the client is told about a failure that ended the episode's model work: a
 * retry could only meet the closed episode, so an error that would read as
 * retryable (the sidecar's own upstream retries spent, an undeliverable answer)
 * is answered as final at once, still naming the fault (its kind is the code).
 * Every client retries 5xx/529 with backoff (seconds each) and stops at a 400.
 */
function finalOnceEnded(error: SidecarError, episode: Episode): SidecarError {
  if (!error.retryable || !isProviderFailure(error) || episode.closedReason() === undefined) return error;
  const now = episode.failure ? `failed (${episode.failure.reason})` : episode.state;
  return new SidecarError(
    "episode_closed",
    `${error.message}; episode ${episode.id} is now ${now}, so a retry cannot succeed`,
    { code: error.code ?? error.kind, cause: error },
  );
}

/** A records write that failed (full disk …) fails the exchange as retryable; anything else as it is. */
function exchangeError(error: unknown): SidecarError {
  if (error instanceof RecordsWriteError) {
    return new SidecarError(
      "unavailable",
      `the sidecar could not write this exchange's records (${error.code ?? "I/O error"}); nothing was delivered`,
    );
  }
  return toSidecarError(error);
}

function revokeQuietly(episode: Episode, batchId: string, reason: string, log: Logger): void {
  try {
    episode.ledger.revoke(batchId, reason);
  } catch (error) {
    log.error("cannot revoke the batch", { batch: batchId, message: (error as Error).message });
  }
}

/** The same error with every configured secret removed from what the client reads. */
function redactError(error: SidecarError, redact: (text: string) => string): SidecarError {
  const message = redact(error.message);
  const param = error.param === undefined ? undefined : redact(error.param);
  if (message === error.message && param === error.param) return error;
  return new SidecarError(error.kind, message, {
    ...(param === undefined ? {} : { param }),
    cause: error,
    episodeFatal: error.episodeFatal,
  });
}
