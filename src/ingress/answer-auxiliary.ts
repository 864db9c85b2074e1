/**
 * An auxiliary response: a final answer the sidecar gives itself, without a model
 * exchange and without a turn (countTokens, count_tokens, an oversized body). It
 * is counted and written to the episode's auxiliary.jsonl, logged with its path
 * and status, and rendered in the client's envelope. Frozen records (after
 * shutdown, or a restored episode) do not change the answer; the miss is logged.
 */
import type { Episode } from "../episodes/episode.ts";
import type { Protocol } from "../hub/protocol.ts";
import { errorMessage } from "../lib/error-message.ts";
import type { SidecarError } from "../lib/errors.ts";
import type { Logger } from "../lib/logger.ts";

export type AuxiliaryEntry = {
  protocol: Protocol;
  operation: string;
  path: string;
} & Record<string, unknown>;

export function answerAuxiliary(
  logger: Logger,
  episode: Episode,
  entry: AuxiliaryEntry,
  error: SidecarError,
  renderError: (error: SidecarError) => Response,
): Response {
  try {
    episode.auxiliaryResponse({ ...entry, status: error.status });
  } catch (cause) {
    logger.warn("auxiliary response not recorded", {
      episode: episode.id,
      message: errorMessage(cause),
    });
  }
  logger.info("auxiliary response", { episode: episode.id, path: entry.path, status: error.status });
  return renderError(error);
}
