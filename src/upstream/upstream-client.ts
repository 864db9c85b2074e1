/**
 * The Qwen Chat Completions client: one buffered exchange with retries.
 * Each attempt streams the whole answer into memory and validates it; nothing is
 * handed on until the exchange is complete. Retries (count, backoff, statuses)
 * come from config; every wait and every attempt is cancellable, and aborting
 * the signal closes the socket (fetch aborts the body read too).
 */
import type { RetryPolicy } from "../config/schema.ts";
import type { HubResponse } from "../hub/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import { linkSignals } from "../lib/link-signals.ts";
import { parseSseText } from "../sse/read-sse.ts";
import { emptyChatAnswer, foldChatChunk, validateChatAnswer } from "./accumulate-chat-stream.ts";
import type { ChatRequest } from "./chat-schema.ts";
import { type AttemptOutcome, openGate, type UpstreamGate } from "./upstream-gate.ts";

export type UpstreamAttempt = {
  attempt: number;
  started_at: string;
  ms: number;
  /** Waited in the shared upstream queue before this attempt was sent. */
  queue_ms?: number;
  /** From sending the request to the response headers. */
  first_byte_ms?: number;
  status?: number;
  error?: string;
  retry_in_ms?: number;
};

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
  timeoutMs: number;
  /** Largest upstream answer read (config upstream.max_response_bytes); over it the attempt fails, nothing is delivered. */
  maxResponseBytes?: number;
  fetch?: typeof fetch;
  clock?: () => number;
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

/** Input tokens of a request body, estimated as the design does (JSON bytes / 4). */
function estimateTokens(body: string): number {
  return Math.ceil(body.length / 4);
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

class RetryableAttemptError extends Error {}

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

function backoff(policy: RetryPolicy, attempt: number, retryAfter: string | null): number {
  const seconds = retryAfter === null ? Number.NaN : Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, policy.max_backoff_ms);
  return Math.min(policy.initial_backoff_ms * 2 ** (attempt - 1), policy.max_backoff_ms);
}

function errorMessageOf(body: string): string {
  try {
    const json = JSON.parse(body) as { error?: { message?: string }; message?: string };
    return json.error?.message ?? json.message ?? body.slice(0, 300);
  } catch {
    return body.slice(0, 300);
  }
}

export const defaultMaxResponseBytes = 32 * 1024 * 1024;

/**
 * The body as text, read while counting: an answer over `limit` bytes is an
 * upstream fault, stopped as soon as it is known (the socket is closed), so a huge
 * answer costs at most `limit` bytes of memory, never its whole size.
 */
async function readCapped(res: Response, limit: number): Promise<string> {
  if (res.body === null) return "";
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
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

export function createUpstreamClient(options: UpstreamClientOptions) {
  const doFetch = options.fetch ?? fetch;
  const clock = options.clock ?? Date.now;
  const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const gate = options.gate ?? openGate;

  async function attemptOnce(
    body: string,
    declared: ReadonlySet<string>,
    signal: AbortSignal,
    onHeaders: () => void,
  ) {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "text/event-stream",
    };
    if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
    const attempt = linkSignals([signal], options.timeoutMs);
    let raw = "";
    try {
      const res = await doFetch(url, { method: "POST", headers, body, signal: attempt.signal });
      onHeaders();
      // The whole exchange is buffered before anything is delivered, so the body is
      // read in one piece and its frames parsed synchronously afterwards.
      raw = await readCapped(res, options.maxResponseBytes ?? defaultMaxResponseBytes);
      if (!res.ok) return { status: res.status, raw, retryAfter: res.headers.get("retry-after") };
      const answer = emptyChatAnswer();
      for (const event of parseSseText(raw)) foldChatChunk(answer, event.data);
      return { status: res.status, raw, response: validateChatAnswer(answer, declared, options.newId) };
    } catch (error) {
      if (signal.aborted) throw signal.reason ?? error;
      if (error instanceof SidecarError) throw new UpstreamFailure(error, [], raw);
      const reason = attempt.timedOut()
        ? `timed out after ${options.timeoutMs} ms`
        : `connection failed: ${(error as Error).message ?? String(error)}`;
      throw new RetryableAttemptError(reason);
    } finally {
      attempt.dispose();
    }
  }

  /**
   * Runs the exchange; throws UpstreamFailure (kind upstream_*) or the abort reason.
   * Each attempt first waits for its turn at the gate.
   */
  async function complete(
    chat: ChatRequest,
    signal: AbortSignal,
    context: CompleteOptions,
  ): Promise<UpstreamExchange> {
    const body = context.body ?? JSON.stringify(chat);
    const estimatedTokens = estimateTokens(body);
    const declared = new Set((chat.tools ?? []).map((t) => t.function.name));
    const attempts: UpstreamAttempt[] = [];
    const policy = options.retry;
    for (let n = 1; ; n++) {
      const permit = await gate.admit({ episodeId: context.episodeId, estimatedTokens, signal });
      let outcome: AttemptOutcome = "failed";
      const started = clock();
      const record: UpstreamAttempt = { attempt: n, started_at: new Date(started).toISOString(), ms: 0 };
      if (permit.waitedMs > 0) record.queue_ms = permit.waitedMs;
      attempts.push(record);
      let failure: SidecarError;
      let retryable = false;
      let retryAfter: string | null = null;
      try {
        const result = await attemptOnce(body, declared, signal, () => {
          record.first_byte_ms = clock() - started;
        });
        record.ms = clock() - started;
        record.status = result.status;
        outcome = result.response ? "answered" : result.status === 429 ? "throttled" : "failed";
        if (result.response) return { response: result.response, rawResponse: result.raw, attempts };
        const message = errorMessageOf(result.raw);
        record.error = message;
        retryable = policy.retry_statuses.includes(result.status);
        retryAfter = result.retryAfter;
        failure =
          retryable || result.status >= 500
            ? new SidecarError("upstream_transient", `upstream answered HTTP ${result.status}: ${message}`)
            : new SidecarError(
                "upstream_rejected",
                `upstream rejected the request (HTTP ${result.status}): ${message}`,
              );
      } catch (error) {
        record.ms = clock() - started;
        if (error instanceof UpstreamFailure) {
          record.error = error.message;
          throw new UpstreamFailure(error, attempts, error.rawResponse);
        }
        if (!(error instanceof RetryableAttemptError)) throw error; // aborted
        record.error = error.message;
        retryable = policy.retry_network_errors;
        failure = new SidecarError("upstream_transient", `upstream ${error.message}`);
      } finally {
        permit.release(outcome);
      }
      if (!retryable || n >= policy.max_attempts) {
        const suffix = n > 1 ? ` (after ${n} attempts)` : "";
        throw new UpstreamFailure(new SidecarError(failure.kind, `${failure.message}${suffix}`), attempts);
      }
      const wait = backoff(policy, n, retryAfter);
      record.retry_in_ms = wait;
      await sleep(wait, signal);
    }
  }

  return { complete };
}

export type UpstreamClient = ReturnType<typeof createUpstreamClient>;
