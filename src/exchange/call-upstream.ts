/**
 * The upstream stage of an exchange: one buffered, validated Chat Completions
 * exchange (upstream-client.ts, with its retries), cancelled when the episode is
 * cancelled, the client leaves or the sidecar shuts down. Every attempt is recorded
 * in the `upstream_response` line, a failed or cancelled exchange's too (a cancelled
 * one says where it was and why: records/upstream-cancel.ts); the answer
 * is recorded before anything is rendered or delivered. With a price table, the line
 * carries the exchange's cost (every billed attempt's usage) and the episode sums it.
 */
import type { HubResponse } from "../hub/schema.ts";
import { errorMessage } from "../lib/error-message.ts";
import { SidecarError } from "../lib/errors.ts";
import { linkSignals } from "../lib/link-signals.ts";
import type { ExchangeCost } from "../pricing/exchange-cost.ts";
import { RecordsWriteError } from "../records/append-file.ts";
import { type CancelReason, cancelMessage, type UpstreamCancel } from "../records/upstream-cancel.ts";
import type { ChatRequest } from "../upstream/chat-schema.ts";
import { hasCacheMarker } from "../upstream/prompt-blocks.ts";
import { type UpstreamAttempt, UpstreamCancelled, UpstreamFailure } from "../upstream/upstream-client.ts";
import type { ExchangeRun } from "./exchange-run.ts";
import type { UpstreamRequest } from "./prepare-upstream-request.ts";

/** Throws UpstreamFailure (kind upstream_*), SidecarError for a cancellation, or RecordsWriteError. */
export async function callUpstream(
  run: ExchangeRun,
  request: UpstreamRequest,
  clientSignal: AbortSignal,
): Promise<HubResponse> {
  const { deps, episode } = run;
  const linked = linkSignals([episode.abortSignal, deps.shutdownSignal, clientSignal]);
  const signal = linked.signal;
  try {
    const exchange = await deps.upstream
      .complete(request.chat, signal, { episodeId: episode.id, body: request.body })
      .finally(linked.dispose);
    const cost = costOf(run, request.chat, exchange.attempts);
    episode.records.upstreamResponse(run.id, {
      attempts: exchange.attempts,
      raw: exchange.rawResponse,
      validated: exchange.response,
      ...(cost ? { cost } : {}),
    });
    if (cost) episode.addCost(cost);
    return exchange.response;
  } catch (error) {
    if (error instanceof RecordsWriteError) throw error;
    if (error instanceof UpstreamFailure) {
      recordAttempts(run, request.chat, error.attempts, error.rawResponse ?? null, error.message);
      throw error;
    }
    if (!signal.aborted) throw error;
    const reason: CancelReason = deps.shutdownSignal.aborted
      ? "shutdown"
      : episode.abortSignal.aborted
        ? "episode_cancelled"
        : "client_closed";
    const cancelled = new SidecarError(
      reason === "shutdown" ? "unavailable" : "episode_closed",
      cancelMessage(reason),
    );
    if (error instanceof UpstreamCancelled && error.attempts.length > 0)
      recordAttempts(run, request.chat, error.attempts, null, cancelled.message, { at: error.at, reason });
    throw cancelled;
  }
}

/** Every attempt, cut or failed, is recorded; the exchange fails anyway if the line cannot be. */
function recordAttempts(
  run: ExchangeRun,
  chat: ChatRequest,
  attempts: UpstreamAttempt[],
  raw: string | null,
  message: string,
  cancelled?: UpstreamCancel,
): void {
  try {
    // A refused answer was billed all the same (docs/pricing.md).
    const cost = costOf(run, chat, attempts);
    run.episode.records.upstreamResponse(run.id, {
      attempts,
      raw,
      error: message,
      ...(cancelled ? { cancelled } : {}),
      ...(cost ? { cost } : {}),
    });
    if (cost) run.episode.addCost(cost);
  } catch (recordsError) {
    run.log.error("cannot record the upstream failure", { message: errorMessage(recordsError) });
  }
}

/**
 * The exchange's cost from the usage each attempt reported, at the request's cache rates
 * (explicit when the sidecar marked it: the two modes are exclusive per request); none
 * without a price table or a price for the episode's model.
 */
function costOf(run: ExchangeRun, chat: ChatRequest, attempts: UpstreamAttempt[]): ExchangeCost | undefined {
  const usages = attempts.flatMap((attempt) => (attempt.usage ? [attempt.usage] : []));
  const explicit = chat.messages.some(
    (message) => Array.isArray(message.content) && message.content.some(hasCacheMarker),
  );
  return run.deps.pricing?.costOf(chat.model, usages, explicit ? "explicit" : "implicit");
}
