/**
 * The Qwen Chat Completions client: one buffered exchange with retries.
 * Each attempt streams the whole answer into memory and validates it; nothing is
 * handed on until the exchange is complete.
 *
 * Timing fits a real model (docs/upstream-errors.md): an attempt is cut only when the
 * upstream sends nothing — response head or body — for `idleTimeoutMs`; an answer that
 * keeps streaming runs on. The whole exchange (queue waits at the gate, attempts and
 * backoff) ends by `deadlineMs`. A failure is classified by the provider's error model
 * (classify-upstream-failure.ts): a final one fails at once, a transient one is retried
 * on the schedule of retry-schedule.ts. Every wait and every attempt is cancellable,
 * and aborting closes the socket (fetch aborts the body read too). Every attempt is
 * recorded with its timing and how it ended.
 */
import type { RetryPolicy } from "../config/schema.ts";
import type { HubResponse, HubUsage } from "../hub/schema.ts";
import { errorMessage } from "../lib/error-message.ts";
import { SidecarError } from "../lib/errors.ts";
import { linkSignals } from "../lib/link-signals.ts";
import { parseSseText } from "../sse/read-sse.ts";
import {
  ChatStreamError,
  emptyChatAnswer,
  foldChatChunk,
  hubUsageOf,
  validateChatAnswer,
} from "./accumulate-chat-stream.ts";
import type { ChatRequest } from "./chat-schema.ts";
import {
  classifyUpstreamFailure,
  type FailureClass,
  type FailureSignal,
} from "./classify-upstream-failure.ts";
import { estimateInputTokens } from "./estimate-input-tokens.ts";
import { decideRetry, parseRetryAfter } from "./retry-schedule.ts";
import type { AttemptEnd, CancelledAt, UpstreamAttempt } from "./upstream-attempt.ts";
import { type AttemptOutcome, openGate, type UpstreamGate } from "./upstream-gate.ts";

export type { AttemptEnd, UpstreamAttempt };

export type UpstreamExchange = {
  response: HubResponse;
  /** The raw body of the successful attempt (SSE text), for the records. */
  rawResponse: string;
  attempts: UpstreamAttempt[];
};

export type UpstreamClientOptions = {
  /** Chat API root, e.g. https://…/compatible-mode/v1 */
  baseUrl: string;
  apiKey: string | undefined;
  retry: RetryPolicy;
  /** No byte from the upstream (head or body) for this long cuts the attempt (upstream.idle_timeout_ms). */
  idleTimeoutMs: number;
  /** The whole exchange ends by this long after it began (upstream.deadline_ms). */
  deadlineMs: number;
  /** Largest upstream answer read (config upstream.max_response_bytes); over it the attempt fails, nothing is delivered. */
  maxResponseBytes?: number;
  fetch?: typeof fetch;
  clock?: () => number;
  /** Uniform in [0, 1): the backoff's jitter. */
  random?: () => number;
  newId: () => string;
  /** The budget all episodes share (upstream-gate.ts); none = every attempt goes at once. */
  gate?: UpstreamGate;
};

/** What an exchange tells the client besides the request itself. */
export type CompleteOptions = {
  /** The episode the request belongs to (the shared queue serves episodes in turn). */
  episodeId: string;
  /** `JSON.stringify(chat)` when the caller has it already: a large request is not serialised twice. */
  body?: string;
};

export interface UpstreamClient {
  /**
   * Runs the exchange; throws UpstreamFailure (kind upstream_*) or, when `signal` is
   * aborted (episode cancelled, client gone, shutdown), UpstreamCancelled.
   */
  complete(chat: ChatRequest, signal: AbortSignal, context: CompleteOptions): Promise<UpstreamExchange>;
}

/** Thrown by `complete` so callers can record every attempt of a failed exchange. */
export class UpstreamFailure extends SidecarError {
  readonly attempts: UpstreamAttempt[];
  readonly rawResponse: string | undefined;
  constructor(cause: SidecarError, attempts: UpstreamAttempt[], rawResponse?: string) {
    super(cause.kind, cause.message, { cause });
    this.attempts = attempts;
    this.rawResponse = rawResponse;
  }
}

/**
 * Thrown by `complete` when its signal is aborted (episode cancelled, client gone,
 * shutdown): the abort's reason as the cause and message, with the attempts made so far
 * and where the exchange was (an attempt in flight, the backoff, the queue).
 */
export class UpstreamCancelled extends Error {
  readonly attempts: UpstreamAttempt[];
  readonly at: CancelledAt;
  constructor(reason: unknown, attempts: UpstreamAttempt[], at: CancelledAt) {
    super(errorMessage(reason), { cause: reason });
    this.name = "UpstreamCancelled";
    this.attempts = attempts;
    this.at = at;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

export const defaultMaxResponseBytes = 32 * 1024 * 1024;

/**
 * The body as text, read while counting: an answer over `limit` bytes is an
 * upstream fault, stopped as soon as it is known (the socket is closed), so a huge
 * answer costs at most `limit` bytes of memory, never its whole size.
 * `onBytes` hears of every chunk (the idle watchdog).
 */
async function readCapped(res: Response, limit: number, onBytes: () => void): Promise<string> {
  if (res.body === null) return "";
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    onBytes();
    bytes += value.byteLength;
    if (bytes > limit) {
      await reader.cancel().catch(() => {});
      throw new SidecarError(
        "upstream_invalid",
        `upstream answer is larger than upstream.max_response_bytes (${limit} bytes); nothing of it is delivered`,
      );
    }
    parts.push(decoder.decode(value, { stream: true }));
  }
  parts.push(decoder.decode());
  return parts.join("");
}

/**
 * Aborts `controller` once nothing has arrived for `idleMs`: one timer, re-armed for
 * the rest of the interval when it fires early, so a long stream costs no timer per chunk.
 */
function idleWatchdog(idleMs: number, controller: AbortController) {
  let lastByteAt = performance.now();
  let fired = false;
  let timer: ReturnType<typeof setTimeout>;
  const check = () => {
    const silent = performance.now() - lastByteAt;
    if (silent >= idleMs) {
      fired = true;
      controller.abort(new DOMException(`no byte for ${idleMs} ms`, "TimeoutError"));
    } else timer = setTimeout(check, idleMs - silent);
  };
  timer = setTimeout(check, idleMs);
  return {
    touch: () => {
      lastByteAt = performance.now();
    },
    fired: () => fired,
    stop: () => clearTimeout(timer),
  };
}

type AttemptResult = (
  | { ended: "answered"; response: HubResponse; raw: string }
  | { ended: "invalid_answer"; error: SidecarError; raw: string }
  | { ended: "deadline" }
  | {
      ended: "http_error" | "idle_timeout" | "connection" | "stream_cut" | "stream_error";
      failure: FailureClass;
      status?: number;
      raw?: string;
      retryAfter?: string | null;
    }
) & {
  /** The usage the upstream reported in the attempt's stream, if it did (what it bills). */
  usage?: HubUsage;
};

export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const doFetch = options.fetch ?? fetch;
  const clock = options.clock ?? Date.now;
  const random = options.random ?? Math.random;
  const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const gate = options.gate ?? openGate;
  const idleMs = options.idleTimeoutMs;

  /**
   * One attempt. Resolves with how it ended; rejects only with the reason of
   * `cancel` (the caller's signal, not the deadline).
   */
  async function attemptOnce(
    body: string,
    declared: ReadonlySet<string>,
    exchange: { signal: AbortSignal; timedOut: () => boolean },
    onHead: (status: number) => void,
  ): Promise<AttemptResult> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "text/event-stream",
    };
    if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
    const controller = new AbortController();
    const linked = linkSignals([exchange.signal, controller.signal]);
    const watchdog = idleWatchdog(idleMs, controller);
    let raw = "";
    const answer = emptyChatAnswer();
    const reported = (): { usage?: HubUsage } => (answer.usage ? { usage: hubUsageOf(answer.usage) } : {});
    try {
      // timeout: false lifts Bun's own 5-minute socket idle limit: the watchdog above is the one that counts.
      const res = await doFetch(url, {
        method: "POST",
        headers,
        body,
        signal: linked.signal,
        timeout: false,
      });
      watchdog.touch();
      onHead(res.status);
      // The whole exchange is buffered before anything is delivered, so the body is
      // read in one piece and its frames parsed synchronously afterwards.
      raw = await readCapped(res, options.maxResponseBytes ?? defaultMaxResponseBytes, watchdog.touch);
      if (!res.ok) {
        return {
          ended: "http_error",
          failure: classifyUpstreamFailure({ kind: "http", status: res.status, body: raw }),
          status: res.status,
          raw,
          retryAfter: res.headers.get("retry-after"),
        };
      }
      for (const event of parseSseText(raw)) foldChatChunk(answer, event.data);
      if (!answer.sawDone) {
        const detail = `${answer.finishReason === undefined ? "no finish_reason" : "no [DONE]"}; ${answer.toolCalls.length} partial tool call(s) discarded`;
        const failure = classifyUpstreamFailure({ kind: "stream_cut", detail });
        return { ended: "stream_cut", failure, status: res.status, raw, ...reported() };
      }
      return {
        ended: "answered",
        raw,
        response: validateChatAnswer(answer, declared, options.newId),
        ...reported(),
      };
    } catch (error) {
      if (exchange.timedOut()) return { ended: "deadline" };
      if (exchange.signal.aborted) throw exchange.signal.reason ?? error;
      if (error instanceof ChatStreamError) {
        const failure = classifyUpstreamFailure({ kind: "stream_error", body: error.data });
        return { ended: "stream_error", failure, status: 200, raw, ...reported() };
      }
      if (error instanceof SidecarError) return { ended: "invalid_answer", error, raw, ...reported() };
      if (watchdog.fired()) {
        return { ended: "idle_timeout", failure: classifyUpstreamFailure({ kind: "idle_timeout", idleMs }) };
      }
      const signal: FailureSignal = { kind: "connection", detail: errorMessage(error) };
      return { ended: "connection", failure: classifyUpstreamFailure(signal) };
    } finally {
      watchdog.stop();
      linked.dispose();
    }
  }

  async function complete(
    chat: ChatRequest,
    signal: AbortSignal,
    context: CompleteOptions,
  ): Promise<UpstreamExchange> {
    const body = context.body ?? JSON.stringify(chat);
    const estimatedTokens = estimateInputTokens(chat, body.length);
    const declared = new Set((chat.tools ?? []).map((t) => t.function.name));
    const attempts: UpstreamAttempt[] = [];
    const policy = options.retry;
    const began = clock();
    const exchange = linkSignals([signal], options.deadlineMs);
    let firstFailureAt: number | undefined;
    let lastFailure: string | undefined;

    /** The exchange's end at its deadline, naming where it was and what failed last. */
    const deadlinePassed = (where: string) =>
      new UpstreamFailure(
        new SidecarError(
          "upstream_transient",
          `the upstream exchange passed its deadline (upstream.deadline_ms, ${options.deadlineMs} ms) ${where}` +
            `${lastFailure ? `; the last failure: ${lastFailure}` : ""} (after ${attempts.length} attempt${attempts.length === 1 ? "" : "s"})`,
        ),
        attempts,
      );
    /** A rejected wait (queue or backoff): the deadline's end, or the caller's cancel as it is. */
    const waitFailed = (error: unknown, where: string, at: CancelledAt): unknown =>
      exchange.timedOut()
        ? deadlinePassed(where)
        : exchange.signal.aborted
          ? new UpstreamCancelled(exchange.signal.reason ?? error, attempts, at)
          : error;

    try {
      for (let n = 1; ; n++) {
        let permit: Awaited<ReturnType<UpstreamGate["admit"]>>;
        try {
          permit = await gate.admit({
            episodeId: context.episodeId,
            estimatedTokens,
            signal: exchange.signal,
          });
        } catch (error) {
          throw waitFailed(error, "while waiting in the upstream queue", "queue");
        }
        const started = clock();
        const record: UpstreamAttempt = {
          attempt: n,
          started_at: new Date(started).toISOString(),
          ms: 0,
          ended: "answered",
        };
        if (permit.waitedMs > 0) record.queue_ms = permit.waitedMs;
        attempts.push(record);
        let outcome: AttemptOutcome = "failed";
        let wait: number;
        try {
          let result: AttemptResult;
          try {
            result = await attemptOnce(body, declared, exchange, (status) => {
              record.first_byte_ms = clock() - started;
              record.status = status;
            });
          } catch (error) {
            record.ended = "cancelled";
            throw new UpstreamCancelled(exchange.signal.reason ?? error, attempts, "attempt");
          }
          record.ms = clock() - started;
          record.ended = result.ended;
          if (result.usage) record.usage = result.usage;
          if (result.ended === "answered") {
            outcome = "answered";
            return { response: result.response, rawResponse: result.raw, attempts };
          }
          if (result.ended === "invalid_answer") {
            // The provider took the request and answered; the answer is what must not pass.
            outcome = "answered";
            record.classification = "final";
            record.cause = "invalid_answer";
            record.error = result.error.message;
            throw new UpstreamFailure(result.error, attempts, result.raw);
          }
          if (result.ended === "deadline") throw deadlinePassed("during an attempt");
          const { failure } = result;
          if (result.status !== undefined) record.status = result.status;
          if (result.ended === "idle_timeout") record.idle_ms = idleMs;
          if (failure.providerCode !== undefined) record.provider_code = failure.providerCode;
          record.classification = failure.retry;
          record.cause = failure.cause;
          record.error = failure.message;
          outcome = failure.throttle ? "throttled" : "failed";
          lastFailure = failure.message;
          if (failure.retry === "final") {
            throw new UpstreamFailure(
              new SidecarError("upstream_rejected", failure.message),
              attempts,
              result.raw,
            );
          }
          const now = clock();
          firstFailureAt ??= now;
          const retryAfterMs = parseRetryAfter(result.retryAfter, now);
          const decision = decideRetry({
            policy,
            attemptsMade: n,
            random,
            now,
            firstFailureAt,
            deadlineAt: began + options.deadlineMs,
            ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
          });
          if (!decision.retry) {
            const over =
              n > 1
                ? ` (after ${n} attempts in ${((now - began) / 1000).toFixed(1)} s: ${decision.reason})`
                : ` (not retried: ${decision.reason})`;
            throw new UpstreamFailure(
              new SidecarError("upstream_transient", `${failure.message}${over}`),
              attempts,
              result.raw,
            );
          }
          wait = decision.waitMs;
          record.retry_in_ms = wait;
        } finally {
          if (record.ms === 0) record.ms = clock() - started;
          permit.release(outcome);
        }
        try {
          await sleep(wait, exchange.signal);
        } catch (error) {
          throw waitFailed(error, "while waiting to retry", "backoff");
        }
      }
    } finally {
      exchange.dispose();
    }
  }

  return { complete };
}
