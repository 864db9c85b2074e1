/**
 * The composition root: every dependency of the app, built once from the config —
 * secrets and redaction, logger, upstream client (or the in-process demo model),
 * episode store with the episodes restored from the data directory (read-only,
 * src/lifecycle), the exchange pipeline, and the graceful shutdown wired to them
 * (src/lifecycle/shutdown.ts). The binary, `validate` and the tests that build an app
 * all come through here, so they run the same wiring; only the socket differs.
 */

import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import type { Hono } from "hono";
import defaultManifestJson from "../../manifests/tools/robot.json" with { type: "json" };
import { createBodyAdmission } from "../body/body-admission.ts";
import type { BodyEnv } from "../body/body-variables.ts";
import { createMemoryReclaimer, type MemoryReclaimer } from "../body/reclaim-memory.ts";
import { ConfigError, type Secrets } from "../config/load-config.ts";
import type { Config } from "../config/schema.ts";
import type { Episode } from "../episodes/episode.ts";
import { createEpisodeStore, type EpisodeStore } from "../episodes/episode-store.ts";
import type { ExecutorFactory } from "../executor/create-executor.ts";
import { codecsWarmedCheck, dataDirWritableCheck } from "../health/readiness.ts";
import type { Codecs } from "../images/codecs.ts";
import { createImageCache, type ImageCache } from "../images/image-cache.ts";
import { convertOnThisThread, type PngToWebp } from "../images/png-to-webp.ts";
import { createResponseStores } from "../ingress/responses/restored-responses.ts";
import { errorMessage } from "../lib/error-message.ts";
import { createRandomIds, type Ids } from "../lib/ids.ts";
import { createKnownTexts, type KnownTexts } from "../lib/known-texts.ts";
import { createLogger, type Logger, type LogLevel } from "../lib/logger.ts";
import { createRedactor } from "../lib/redactor.ts";
import { createOffThreadSha256, type OffThreadSha256 } from "../lib/sha256-off-thread.ts";
import { type RestoreProblem, restoreEpisodes } from "../lifecycle/restore-episodes.ts";
import { createShutdown } from "../lifecycle/shutdown.ts";
import { manifestSchema } from "../manifest/manifest-schema.ts";
import { createToolChecks } from "../mcp/tool-validators.ts";
import { createModelCatalog } from "../models/model-catalog.ts";
import { createMetrics } from "../observe/metrics.ts";
import { combineObservers, type Observer } from "../observe/observer.ts";
import { loadTracing } from "../observe/tracing/tracing.ts";
import { createPricing } from "../pricing/pricing.ts";
import { createBlobStore } from "../records/blob-store.ts";
import { createDataDirBudget } from "../records/data-dir-budget.ts";
import { openRecords } from "../records/read-records.ts";
import {
  createScriptedUpstream,
  type ScriptedUpstream,
} from "../scripted-upstream/create-scripted-upstream.ts";
import { createPixelReader } from "../scripted-upstream/pixel-reader.ts";
import { createShipping, type Shipping } from "../shipping/create-shipping.ts";
import { applyLocalRetention } from "../shipping/local-retention.ts";
import { CredentialsError } from "../shipping/s3-credentials.ts";
import { noShippingTotals } from "../shipping/shipper.ts";
import { createUpstreamBudget } from "../upstream/upstream-budget.ts";
import { createUpstreamClient } from "../upstream/upstream-client.ts";
import { createApp, type EpisodeRouteGroup } from "./app.ts";
import { episodeRouteGroups } from "./episode-route-groups.ts";
import type { RouteDeps } from "./route-deps.ts";

export type ComposeOptions = {
  config: Config;
  secrets: Secrets;
  version: string;
  /**
   * The WASM codecs on this thread, loaded when first asked for: only the demo model
   * (reading a pixel) and the default converter use them, so a binary that converts in
   * its workers never loads a second copy. And whether the converter is warmed yet
   * (readiness; default: yes).
   */
  codecs: () => Promise<Codecs>;
  codecsWarmed?: () => boolean;
  /** PNG → WebP for the exchanges (the binary: the worker pool); default: on this thread with `codecs`. */
  converter?: PngToWebp;
  /** Closed after the drain (the worker pool). */
  closeConverter?: () => Promise<void>;
  /** The public origin of the app once it listens (episode URLs, the Host check). */
  baseUrl: () => string;
  /** Stops the listening socket (and lets go of the data directory) once the records are frozen. */
  stopServer?: () => void;
  ids?: Ids;
  clock?: () => number;
  /** Where log lines go (default: stderr), and from which level (default: config.log_level). */
  logWrite?: (line: string) => void;
  logLevel?: LogLevel;
  /**
   * Route groups mounted under /e/{episode} after the shipped ones (episode-route-groups.ts):
   * a spoke that is not shipped, mounted the way the shipped ones are (docs/architecture.md).
   */
  episodeRoutes?: readonly EpisodeRouteGroup[];
  /** Answers upstream requests in process instead of the network or the demo model. */
  upstreamFetch?: (request: Request) => Response | Promise<Response>;
  /** Where request bodies' long strings are hashed (default: a worker with server.hash_worker, else this thread). */
  hashing?: OffThreadSha256;
  /** The executor of each new episode (default: from config.executor). */
  createExecutor?: ExecutorFactory;
  /** Where shipping reads its AWS_* credentials and tracing its OTEL_* settings (default: process.env). */
  env?: Record<string, string | undefined>;
};

/** A request body from which its memory is reclaimed early: a camera history of about five frames. */
const reclaimAfterBytes = 4 * 1024 * 1024;

/** The sidecar composed: its app, its episodes, what tests and the entry point stop or inspect. */
export interface Composition {
  app: Hono<BodyEnv>;
  config: Config;
  dataDir: string;
  episodes: EpisodeStore;
  imageCache: ImageCache;
  /** What the sidecar derived from long strings (resent frames), by their text's SHA-256. */
  knownTexts: KnownTexts;
  /** Asks for garbage collections: after large requests and ended episodes, and when the server is idle. */
  memory: MemoryReclaimer;
  logger: Logger;
  /** The in-process demo model, when no upstream URL is configured. */
  scripted: ScriptedUpstream | undefined;
  demo: boolean;
  /** The episodes restored read-only from the data directory, and the directories that could not be. */
  restored: { episodes: Episode[]; problems: RestoreProblem[] };
  shipping: Shipping | undefined;
  controlPassword: string;
  /** Every credential registered so far (logs and records redact them). */
  secrets: readonly string[];
  /** Cancels upstream work and retry waits without draining (tests that just stop). */
  abortUpstream(reason: string): void;
  /** Drains, freezes the records and closes; resolves with the exit code. */
  shutdown(reason: string): Promise<number>;
  /** Resolves with the exit code once shut down. */
  closed: Promise<number>;
}

export async function composeApp(options: ComposeOptions): Promise<Composition> {
  const { config, codecs } = options;
  const clock = options.clock ?? Date.now;
  const ids = options.ids ?? createRandomIds();
  const dataDir = resolve(config.data_dir);
  const secrets: string[] = [];
  const registerSecret = (secret: string) => secrets.push(secret);
  if (options.secrets.upstreamApiKey) registerSecret(options.secrets.upstreamApiKey);
  const controlPassword = options.secrets.controlPassword ?? randomBytes(18).toString("base64url");
  registerSecret(controlPassword);
  const redact = createRedactor(() => secrets);
  // Loaded before the logger so that log lines carry the current trace id; the
  // OpenTelemetry SDK is imported only when an OTLP endpoint is configured.
  let modelOf = (_episode: string): string | undefined => undefined;
  const tracing = await loadTracing({
    env: options.env ?? process.env,
    version: options.version,
    modelOf: (episode) => modelOf(episode),
  });
  const logger = createLogger({
    level: options.logLevel ?? config.log_level,
    redact,
    write: options.logWrite,
    ...(tracing ? { fields: tracing.logFields } : {}),
  });

  const models = createModelCatalog(config.upstream.models);
  const prices = config.upstream.prices;
  const pricing = prices
    ? createPricing(prices, (model) =>
        logger.warn("no price for this model in upstream.prices: its exchanges have no cost", {
          model,
          currency: prices.currency,
        }),
      )
    : undefined;
  const demo = config.upstream.url === undefined;
  const scripted = demo
    ? createScriptedUpstream({
        readPixel: createPixelReader(codecs),
        defaultModel: config.upstream.model,
        profile: config.upstream.scripted_profile,
        // The demo model refuses an over-long prompt as Model Studio does, at the model's own limit.
        maxInputTokens: (model) => {
          const resolution = models.resolve(model);
          return resolution.ok ? resolution.capabilities.max_input_tokens : undefined;
        },
      })
    : undefined;
  // The demo model (or a test's stand-in) runs in-process: no socket, nothing leaves the machine.
  const answer = options.upstreamFetch ?? scripted?.fetch;
  // One budget for every episode: they share the provider key and its quota.
  const upstreamBudget = createUpstreamBudget(config.upstream.budget);
  const upstream = createUpstreamClient({
    gate: upstreamBudget,
    baseUrl: config.upstream.url ?? "http://scripted-upstream.invalid/v1",
    apiKey: options.secrets.upstreamApiKey,
    retry: config.upstream.retry,
    idleTimeoutMs: config.upstream.idle_timeout_ms,
    deadlineMs: config.upstream.deadline_ms,
    maxResponseBytes: config.upstream.max_response_bytes,
    newId: ids.callId,
    clock,
    ...(answer
      ? {
          fetch: ((input: string | URL | Request, init?: RequestInit) =>
            answer(new Request(input as string, init))) as typeof fetch,
        }
      : {}),
  });

  const defaultManifest = manifestSchema.parse(defaultManifestJson);
  // Scrape-time figures read the store, which is built just below.
  const episodeList = () => episodes.list();
  // Built below, after the episode store it reads; /metrics is scraped only once serving.
  let shipping: Shipping | undefined;
  const metrics = createMetrics({
    version: options.version,
    episodeStates: () => episodeList().map((e) => e.state),
    openMcpSessions: () =>
      episodeList().reduce((n, e) => n + e.mcp.sessions_opened - e.mcp.sessions_closed, 0),
    uncertainCalls: () => episodeList().reduce((n, e) => n + e.ledger.summary().uncertain.length, 0),
    upstreamBudget: () => upstreamBudget.state(),
    ...(config.shipping
      ? {
          shipping: {
            states: () => shipping?.shipper.states() ?? [],
            totals: () => shipping?.shipper.totals() ?? noShippingTotals,
          },
        }
      : {}),
  });
  // Retention: every blob and record line written counts against records.max_bytes.
  const budget = createDataDirBudget(dataDir, config.records.max_bytes);
  const countWritten: Observer = {
    observe: (event) => {
      if (event.kind === "records_written") budget.add(event.bytes);
    },
  };
  const observer = combineObservers(
    [metrics.observer, countWritten, ...(tracing ? [tracing.observer] : [])],
    (error) => logger.warn("observer failed", { message: errorMessage(error) }),
  );
  const blobs = createBlobStore(dataDir, {
    fsync: config.records.fsync,
    written: (bytes) => budget.add(bytes),
  });
  const imageCache = createImageCache(config.images.cache_bytes);
  // A known frame's text is rebuilt from its blob only when a stage asks for it (known-frame.ts).
  // With server.hash_worker, long strings are hashed in a worker while the body arrives
  // (sha256-off-thread.ts), started at the first; else on this thread.
  const hashing = options.hashing ?? (config.server.hash_worker ? createOffThreadSha256() : undefined);
  const knownTexts = createKnownTexts(
    undefined,
    {
      onDisk: (digest) => blobs.onDiskNow(digest),
      read: (digest) => blobs.read(digest),
      setAside: (digest) => blobs.setAside(digest),
    },
    hashing,
  );
  const memory = createMemoryReclaimer({ thresholdBytes: reclaimAfterBytes });
  const episodes = createEpisodeStore({
    observer,
    episodeEnded: (id) => {
      imageCache.release(id);
      memory.released();
    },
    config,
    dataDir,
    defaultManifest,
    blobs,
    ids,
    clock,
    redact,
    registerSecret,
    baseUrl: options.baseUrl,
    logger,
    ...(options.createExecutor ? { createExecutor: options.createExecutor } : {}),
  });
  shipping = await composeShipping(options, {
    dataDir,
    registerSecret,
    logger,
    clock,
    episodes: () => episodes.list().map((e) => ({ id: e.id, state: e.state, dir: e.records.dir })),
  });
  const restored = restoreEpisodes({
    dataDir,
    config,
    defaultManifest,
    clock,
    redact,
    blobs,
    logger,
  });
  for (const episode of restored.episodes) episodes.adopt(episode);
  modelOf = (episode) => episodes.list().find((e) => e.id === episode)?.model;

  const shutdownController = new AbortController();
  const routeDeps: RouteDeps = {
    episodes,
    logger,
    clock,
    ids,
    toolChecks: createToolChecks(),
    responses: createResponseStores(openRecords(dataDir, blobs)),
    bodyLimitBytes: config.body_limit_bytes,
    mcpProgressIntervalMs: config.mcp_progress_interval_ms,
    exchange: {
      recordsBudget: budget,
      upstream,
      images: {
        converter: options.converter ?? {
          convert: async (png, settings) => convertOnThisThread(await codecs()).convert(png, settings),
        },
        settings: config.images.webp,
        cache: imageCache,
      },
      sizeLimits: config.images.limits,
      models,
      ...(pricing ? { pricing } : {}),
      parallelToolCalls: config.upstream.parallel_tool_calls,
      logger,
      shutdownSignal: shutdownController.signal,
      redact,
      ...(config.stream_keepalive.enabled
        ? {
            keepAlive: {
              headAfterMs: config.stream_keepalive.head_after_ms,
              // Under the server's own cut of a connection that writes nothing (Bun counts in 4 s steps).
              everyMs: Math.min(
                config.stream_keepalive.every_ms,
                (config.server.idle_timeout_seconds - 5) * 1000,
              ),
            },
          }
        : {}),
    },
  };

  const lifecycle = createShutdown({
    episodes,
    logger,
    clock,
    drainDeadlineMs: config.shutdown.drain_deadline_ms,
    cancelUpstream: (reason) => shutdownController.abort(reason),
    ...(shipping ? { stopShipping: () => shipping.shipper.stop() } : {}),
    ...(options.stopServer ? { stopServer: options.stopServer } : {}),
    closeConverter: async () => {
      hashing?.close();
      await options.closeConverter?.();
    },
    ...(tracing ? { flushTraces: () => tracing.shutdown() } : {}),
  });

  const app = createApp({
    ...routeDeps,
    control: {
      episodes,
      controlPassword,
      shutdown: () => void lifecycle.shutdown("control API"),
      shippingStatus: shipping ? (id) => shipping.shipper.status(id) : undefined,
      clock,
    },
    version: options.version,
    demoUpstream: demo && options.upstreamFetch === undefined,
    bodyLimitBytes: config.body_limit_bytes,
    serverLimits: config.server,
    isShuttingDown: () => lifecycle.shuttingDown,
    metrics,
    readiness: [codecsWarmedCheck(options.codecsWarmed ?? (() => true)), dataDirWritableCheck(dataDir)],
    episodeRoutes: [...episodeRouteGroups, ...(options.episodeRoutes ?? [])],
    memory,
    admission: createBodyAdmission(config.body_bytes_in_flight),
    knownTexts,
    ui: { episodes, dataDir, clock },
    ...(tracing ? { tracing } : {}),
  });

  return {
    app,
    config,
    dataDir,
    episodes,
    imageCache,
    knownTexts,
    memory,
    logger,
    scripted,
    demo,
    restored,
    shipping,
    controlPassword,
    secrets,
    abortUpstream: (reason: string) => shutdownController.abort(new Error(reason)),
    shutdown: lifecycle.shutdown,
    closed: lifecycle.closed,
  };
}

/** Records shipping (config.shipping), after the local retention ran: it may delete shipped episodes before they are restored. */
async function composeShipping(
  options: ComposeOptions,
  deps: Pick<
    Parameters<typeof createShipping>[0],
    "dataDir" | "registerSecret" | "logger" | "clock" | "episodes"
  >,
): Promise<Shipping | undefined> {
  const settings = options.config.shipping;
  if (!settings) return undefined;
  let shipping: Shipping;
  try {
    shipping = createShipping({ ...deps, config: settings, env: options.env ?? process.env });
  } catch (error) {
    if (error instanceof CredentialsError) throw new ConfigError([error.message]);
    throw error;
  }
  if (settings.delete_local_after_ms !== undefined) {
    await applyLocalRetention({
      dataDir: deps.dataDir,
      journal: shipping.journal,
      deleteAfterMs: settings.delete_local_after_ms,
      clock: deps.clock,
      logger: deps.logger,
    });
  }
  return shipping;
}
