/**
 * How an exchange fails, whatever stage it failed in: its turn given back (or the
 * failure counted without one), a provider failure ending the episode's model work,
 * a `failed` status line (with the context decision reached, for a context failure),
 * and an error in the client's own envelope with every configured secret removed.
 */
import type { ContextDecision } from "../context/apply-context.ts";
import { contextFailureRecord } from "../context/apply-context.ts";
import type { Episode } from "../episodes/episode.ts";
import { errorMessage } from "../lib/error-message.ts";
import { SidecarError, toSidecarError } from "../lib/errors.ts";
import { RecordsWriteError } from "../records/append-file.ts";
import type { ExchangeSpec } from "./exchange-contract.ts";
import type { ExchangeRun } from "./exchange-run.ts";
import type { Turn } from "./reserve-turn.ts";

/** `turn`: the exchange's, when it held one by then. */
export function failExchange(
  run: ExchangeRun,
  renderError: ExchangeSpec["renderError"],
  turn: Turn | undefined,
  thrown: unknown,
): Response {
  const { episode, log } = run;
  const error = exchangeError(thrown);
  const providerError = isProviderFailure(error) ? error.message : undefined;
  if (turn) turn.failed(providerError);
  else episode.exchangeFailed({ heldTurn: false, ...(providerError === undefined ? {} : { providerError }) });
  const answer = finalOnceEnded(error, episode);
  // A context failure (protected content over target) is recorded with its decision.
  const context: { context_decision?: ContextDecision } = contextFailureRecord(thrown);
  try {
    episode.records.status(run.id, {
      status: "failed",
      error: {
        kind: error.kind,
        message: error.message,
        param: error.param ?? null,
        http_status: answer.status,
      },
      episode_state: episode.state,
      ...(run.keptAlive ? { keepalives: run.keptAlive.keepalives } : {}),
      ...(run.keptAlive && !run.keptAlive.clientLeft && !run.clientSignal?.aborted
        ? { told_in_stream: true as const }
        : {}),
      ...context,
    });
  } catch (recordsError) {
    // The exchange fails anyway; the records failure is in the episode's status.
    log.error("cannot record the exchange's failure", { message: errorMessage(recordsError) });
  }
  log.warn("exchange failed", { kind: error.kind, status: answer.status, message: error.message });
  return renderError(redactError(answer, run.deps.redact));
}

/** Upstream failures end the episode's model work: an outer CLI retry must not create more. */
function isProviderFailure(error: SidecarError): boolean {
  return error.kind.startsWith("upstream_") || error.episodeFatal;
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
export function exchangeError(error: unknown): SidecarError {
  if (error instanceof RecordsWriteError) {
    return new SidecarError(
      "unavailable",
      `the sidecar could not write this exchange's records (${error.code ?? "I/O error"}); nothing was delivered`,
    );
  }
  return toSidecarError(error);
}

/** The same error with every configured secret removed from what the client reads. */
export function redactError(error: SidecarError, redact: (text: string) => string): SidecarError {
  const message = redact(error.message);
  const param = error.param === undefined ? undefined : redact(error.param);
  if (message === error.message && param === error.param) return error;
  return new SidecarError(error.kind, message, {
    ...(param === undefined ? {} : { param }),
    cause: error,
    episodeFatal: error.episodeFatal,
  });
}
