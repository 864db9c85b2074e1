/**
 * What every stage of one exchange is given besides its own input: the pipeline's
 * dependencies (from the composition root), the episode, the exchange's id and its
 * logger. The stages (run-exchange.ts lists them) take this and a typed input, and
 * return a typed output or throw.
 */

import type { Episode } from "../episodes/episode.ts";
import type { ImageCache } from "../images/image-cache.ts";
import type { PngToWebp } from "../images/png-to-webp.ts";
import type { WebpSettings } from "../images/settings.ts";
import type { SizeLimits } from "../images/size-guard.ts";
import type { TextHold } from "../lib/known-texts.ts";
import type { Logger } from "../lib/logger.ts";
import type { ModelCatalog } from "../models/model-catalog.ts";
import type { Pricing } from "../pricing/pricing.ts";
import type { DataDirBudget } from "../records/data-dir-budget.ts";
import type { UpstreamClient } from "../upstream/upstream-client.ts";
import type { KeepAliveOutcome, KeepAliveTiming } from "./keep-streaming-alive.ts";

export type ExchangeDeps = {
  upstream: UpstreamClient;
  /** The data directory's bound (records.max_bytes); none = unbounded. */
  recordsBudget?: Pick<DataDirBudget, "checkNewExchange">;
  /** PNG → WebP (the worker pool) and the process-wide cache of converted images. */
  images: { converter: PngToWebp; settings: WebpSettings; cache: ImageCache };
  sizeLimits: SizeLimits;
  /** Each episode's model capabilities: the max_tokens clamp and whether images may go upstream. */
  models: ModelCatalog;
  /** The operator's price table (upstream.prices): each exchange's cost; none = no cost anywhere. */
  pricing?: Pricing;
  parallelToolCalls: boolean;
  logger: Logger;
  /** Aborted when the sidecar shuts down: cancels upstream requests and retry waits. */
  shutdownSignal: AbortSignal;
  /**
   * Removes every configured secret from what is sent to the client (an upstream may
   * echo its bearer in an error message or an answer), as from logs and records.
   */
  redact: (text: string) => string;
  /** Head and keepalives for a streaming client while the exchange waits (keep-streaming-alive.ts); none = off. */
  keepAlive?: KeepAliveTiming;
};

/** One exchange under way. */
export type ExchangeRun = {
  deps: ExchangeDeps;
  episode: Episode;
  /** `ex_0001`, …: names the exchange's record lines and its ledger batch. */
  id: string;
  log: Logger;
  /** Set once the response head went out before the exchange settled: its end is told in-stream. */
  keptAlive?: KeepAliveOutcome;
  /** The client's request signal, where the exchange keeps a stream open for it. */
  clientSignal?: AbortSignal;
  /** The request's hold of its long strings, until the answer is ready (known-texts.ts). */
  texts?: TextHold;
};
