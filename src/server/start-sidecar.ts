/**
 * Composition root: builds every dependency from the config, restores the
 * episodes found in the data directory (read-only, src/lifecycle), serves the
 * app and owns the graceful shutdown (stop accepting, cancel upstream work and
 * retry waits, drain handlers and admitted callbacks up to a deadline, freeze
 * records; exit code 0 when drained, 3 when the drain overran its deadline).
 */
import { randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import defaultManifestJson from "../../manifests/tools/robot.json" with { type: "json" };
import { createApp } from "../app.ts";
import type { Secrets } from "../config/load-config.ts";
import { ConfigError, parseListen } from "../config/load-config.ts";
import type { Config } from "../config/schema.ts";
import { secretWeakness } from "../config/secret-strength.ts";
import { createEpisodeStore, episodeUrls } from "../episodes/episode-store.ts";
import { createRandomIds, type Ids } from "../episodes/ids.ts";
import { codecsWarmedCheck, dataDirWritableCheck } from "../health/readiness.ts";
import { loadCodecs } from "../images/codecs.ts";
import { warmUpCodecs } from "../images/warm-up.ts";
import type { IngressDeps } from "../ingress/ingress-deps.ts";
import { createLogger } from "../lib/logger.ts";
import { drainEpisodes, freezeEpisodes } from "../lifecycle/drain-episodes.ts";
import { restoreEpisodes } from "../lifecycle/restore-episodes.ts";
import { manifestSchema } from "../manifest/manifest-schema.ts";
import { createMetrics } from "../observe/metrics.ts";
import { combineObservers } from "../observe/observer.ts";
import { loadTracing } from "../observe/tracing/tracing.ts";
import { lockDataDir } from "../records/data-dir-lock.ts";
import { createRedactor } from "../records/episode-records.ts";
import { createScriptedUpstream } from "../scripted-upstream/create-scripted-upstream.ts";
import { createPixelReader } from "../scripted-upstream/pixel-reader.ts";
import { createShipping, type Shipping } from "../shipping/create-shipping.ts";
import { applyLocalRetention } from "../shipping/local-retention.ts";
import { CredentialsError } from "../shipping/s3-credentials.ts";
import { noShippingTotals } from "../shipping/shipper.ts";
import { createUpstreamClient } from "../upstream/upstream-client.ts";
import { episodeRouteGroups } from "./episode-route-groups.ts";

export type StartOptions = {
  config: Config;
  secrets: Secrets;
  version: string;
  out: (line: string) => void;
  ids?: Ids;
  clock?: () => number;
  /** Where log lines go (default: stderr); `validate` keeps them in a file. */
  logWrite?: (line: string) => void;
  /** Where shipping reads its AWS_* credentials and tracing its OTEL_* settings (default: process.env). */
  env?: Record<string, string | undefined>;
};

export async function startSidecar(options: StartOptions) {
  const { config, out } = options;
  const clock = options.clock ?? Date.now;
  const ids = options.ids ?? createRandomIds();
  const weak = [
    secretWeakness("URA_UPSTREAM_API_KEY", options.secrets.upstreamApiKey),
    secretWeakness("URA_CONTROL_PASSWORD", options.secrets.controlPassword),
  ].filter((problem) => problem !== undefined);
  if (weak.length > 0) throw new ConfigError(weak);
  const secrets: string[] = [];
  const registerSecret = (s: string) => secrets.push(s);
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
    level: config.log_level,
    redact,
    write: options.logWrite,
    ...(tracing ? { fields: tracing.logFields } : {}),
  });
  // Before anything reads or writes the data directory: one sidecar per directory.
  const dataDirLock = lockDataDir(resolve(config.data_dir));

  const codecs = await loadCodecs();
  // The listener opens only after this warm-up today; readiness still checks the flag so
  // that a warm-up moved off the start-up path can never serve exchanges cold.
  let codecsWarmed = false;
  const warmMs = warmUpCodecs(codecs, config.images.webp);
  codecsWarmed = true;
  logger.debug("image codecs ready", { warm_up_ms: warmMs });

  const demo = config.upstream.url === undefined;
  const scripted = demo
    ? createScriptedUpstream({ readPixel: createPixelReader(codecs), defaultModel: config.upstream.model })
    : undefined;
  const upstream = createUpstreamClient({
    baseUrl: config.upstream.url ?? "http://scripted-upstream.invalid/v1",
    apiKey: options.secrets.upstreamApiKey,
    retry: config.upstream.retry,
    timeoutMs: config.upstream.timeout_ms,
    maxResponseBytes: config.upstream.max_response_bytes,
    newId: ids.callId,
    clock,
    // The demo model runs in-process: no socket, nothing leaves the machine.
    ...(scripted
      ? {
          fetch: ((input: string | URL | Request, init?: RequestInit) =>
            scripted.fetch(new Request(input as string, init))) as typeof fetch,
        }
      : {}),
  });

  const shutdownController = new AbortController();
  let shuttingDown = false;
  let server: ReturnType<typeof Bun.serve> | undefined;
  const { hostname, port } = parseListen(config.listen);
  const baseUrl = () =>
    `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${server?.port ?? port}`;

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
    ...(config.shipping
      ? {
          shipping: {
            states: () => shipping?.shipper.states() ?? [],
            totals: () => shipping?.shipper.totals() ?? noShippingTotals,
          },
        }
      : {}),
  });
  const observer = combineObservers([metrics.observer, ...(tracing ? [tracing.observer] : [])], (error) =>
    logger.warn("observer failed", { message: (error as Error).message }),
  );
  const episodes = createEpisodeStore({
    observer,
    config,
    dataDir: resolve(config.data_dir),
    defaultManifest,
    imageCache: config.images.cache,
    ids,
    clock,
    redact,
    registerSecret,
    baseUrl,
    logger,
  });

  if (config.shipping) {
    try {
      shipping = createShipping({
        config: config.shipping,
        env: options.env ?? process.env,
        dataDir: config.data_dir,
        episodes: () => episodes.list().map((e) => ({ id: e.id, state: e.state, dir: e.records.dir })),
        registerSecret,
        logger,
        clock,
      });
    } catch (error) {
      if (error instanceof CredentialsError) throw new ConfigError([error.message]);
      throw error;
    }
    if (config.shipping.delete_local_after_ms !== undefined) {
      await applyLocalRetention({
        dataDir: resolve(config.data_dir),
        journal: shipping.journal,
        deleteAfterMs: config.shipping.delete_local_after_ms,
        clock,
        logger,
      });
    }
  }

  const restored = restoreEpisodes({
    dataDir: resolve(config.data_dir),
    config,
    imageCache: config.images.cache,
    defaultManifest,
    clock,
    redact,
    logger,
  });
  for (const episode of restored.episodes) episodes.adopt(episode);
  modelOf = (episode) => episodes.list().find((e) => e.id === episode)?.model;

  const ingress: IngressDeps = {
    episodes,
    logger,
    clock,
    ids,
    bodyLimitBytes: config.body_limit_bytes,
    exchange: {
      upstream,
      images: { codecs, settings: config.images.webp },
      sizeLimits: config.images.limits,
      imageInput: config.upstream.image_input,
      parallelToolCalls: config.upstream.parallel_tool_calls,
      maxOutputTokens: config.upstream.max_output_tokens,
      logger,
      shutdownSignal: shutdownController.signal,
      redact,
    },
  };

  let resolveClosed: (code: number) => void = () => {};
  const closed = new Promise<number>((r) => {
    resolveClosed = r;
  });

  async function shutdown(reason: string): Promise<number> {
    if (shuttingDown) return closed;
    shuttingDown = true;
    // Order matters: refuse new work first, then cancel upstream requests and retry waits, then wait.
    episodes.stopAccepting();
    shipping?.shipper.stop();
    logger.info("shutting down", { reason, drain_deadline_ms: config.shutdown.drain_deadline_ms });
    shutdownController.abort(new Error(`shutdown: ${reason}`));
    const all = episodes.list();
    const drain = await drainEpisodes(all, { deadlineMs: config.shutdown.drain_deadline_ms, clock });
    let frozeAll = true;
    try {
      freezeEpisodes(all, drain, reason);
    } catch (error) {
      frozeAll = false;
      logger.error("cleanup failure: records could not be frozen", { message: (error as Error).message });
    }
    server?.stop(true);
    if (!drain.complete) {
      logger.error("cleanup failure: drain overran its deadline; records are frozen with complete:false", {
        deadline_ms: drain.deadlineMs,
        unfinished_calls: Object.fromEntries(drain.unfinishedCalls),
        pending_handlers: Object.fromEntries(drain.pendingHandlers),
      });
    } else logger.info("shutdown complete", { drain_ms: drain.elapsedMs, episodes: all.length });
    const code = drain.complete && frozeAll ? 0 : 3;
    dataDirLock.release();
    await tracing
      ?.shutdown()
      .catch((error: Error) =>
        logger.warn("traces could not be exported at shutdown", { message: error.message }),
      );
    resolveClosed(code);
    return code;
  }

  const app = createApp({
    ...ingress,
    control: {
      episodes,
      controlPassword,
      shutdown: () => void shutdown("control API"),
      shippingStatus: shipping ? (id) => shipping.shipper.status(id) : undefined,
    },
    version: options.version,
    demoUpstream: demo,
    bodyLimitBytes: config.body_limit_bytes,
    isShuttingDown: () => shuttingDown,
    metrics,
    ui: { episodes, dataDir: resolve(config.data_dir) },
    ...(tracing ? { tracing } : {}),
    readiness: [codecsWarmedCheck(() => codecsWarmed), dataDirWritableCheck(resolve(config.data_dir))],
    episodeRoutes: episodeRouteGroups,
  });

  server = Bun.serve({
    hostname,
    port,
    fetch: (req, srv) => app.fetch(req, { server: srv }),
    idleTimeout: 0,
  });
  logger.info("listening", { url: baseUrl(), data_dir: resolve(config.data_dir), demo_upstream: demo });
  if (demo) {
    out("");
    out(
      "  *** DEMO MODEL: no URA_UPSTREAM_URL set — answering with the embedded scripted upstream, not Qwen ***",
    );
  }
  out(`ura-sidecar ${options.version} listening on ${baseUrl()}`);
  if (restored.episodes.length > 0 || restored.problems.length > 0) {
    const interrupted = restored.episodes.filter((e) => e.state === "interrupted").length;
    out(
      `restored ${restored.episodes.length} episode(s) read-only (${interrupted} interrupted)${restored.problems.length > 0 ? `; ${restored.problems.length} director(ies) not restored, see the log` : ""}`,
    );
  }
  if (shipping) {
    shipping.shipper.start();
    logger.info("shipping ended episodes", {
      endpoint: shipping.endpoint ?? null,
      bucket: config.shipping?.bucket,
      prefix: config.shipping?.prefix,
    });
  }
  if (!options.secrets.controlPassword) out(`control password (generated, shown once): ${controlPassword}`);

  let defaultEpisode: ReturnType<typeof episodes.create> | undefined;
  if (config.default_episode) {
    defaultEpisode = episodes.create({ max_turns: 0, context: config.context });
    const urls = episodeUrls(baseUrl(), defaultEpisode.id);
    out(`default episode ${defaultEpisode.id}`);
    out(`  OpenAI Responses base URL  ${urls.responses}`);
    out(`  Gemini base URL            ${urls.gemini}`);
    out(`  Anthropic base URL         ${urls.anthropic}`);
    out(`  MCP server (ura)           ${urls.mcp}`);
    out(`  API key                    ${defaultEpisode.ingressKey}`);
    out(`  MCP bearer token           ${defaultEpisode.mcpToken}`);
    out(`  records                    ${join(resolve(config.data_dir), "episodes", defaultEpisode.id)}`);
  }

  return {
    app,
    server,
    episodes,
    shutdown,
    closed,
    baseUrl,
    controlPassword,
    defaultEpisode,
    scripted,
    logger,
    restored,
    shipping,
  };
}

export type Sidecar = Awaited<ReturnType<typeof startSidecar>>;
