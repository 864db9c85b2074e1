/**
 * Composition root: builds every dependency from the config, serves the app and
 * owns the graceful shutdown (stop accepting, cancel upstream work and retry
 * waits, drain handlers and admitted callbacks up to a deadline, freeze records).
 */
import { randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import defaultManifestJson from "../../manifests/tools/robot.json" with { type: "json" };
import { createScriptedUpstream } from "../../fixtures/scripted-upstream/create-scripted-upstream.ts";
import { createPixelReader } from "../../fixtures/scripted-upstream/pixel-reader.ts";
import { createApp } from "../app.ts";
import type { Secrets } from "../config/load-config.ts";
import { parseListen } from "../config/load-config.ts";
import type { Config } from "../config/schema.ts";
import { createEpisodeStore, episodeUrls } from "../episodes/episode-store.ts";
import { createRandomIds, type Ids } from "../episodes/ids.ts";
import { loadCodecs } from "../images/codecs.ts";
import { warmUpCodecs } from "../images/warm-up.ts";
import type { IngressDeps } from "../ingress/ingress-deps.ts";
import { createLogger } from "../lib/logger.ts";
import { manifestSchema } from "../manifest/manifest-schema.ts";
import { createRedactor } from "../records/episode-records.ts";
import { createUpstreamClient } from "../upstream/upstream-client.ts";
import { episodeRouteGroups } from "./episode-route-groups.ts";

export type StartOptions = {
  config: Config;
  secrets: Secrets;
  version: string;
  out: (line: string) => void;
  ids?: Ids;
  clock?: () => number;
};

export async function startSidecar(options: StartOptions) {
  const { config, out } = options;
  const clock = options.clock ?? Date.now;
  const ids = options.ids ?? createRandomIds();
  const secrets: string[] = [];
  const registerSecret = (s: string) => secrets.push(s);
  if (options.secrets.upstreamApiKey) registerSecret(options.secrets.upstreamApiKey);
  const controlPassword = options.secrets.controlPassword ?? randomBytes(18).toString("base64url");
  registerSecret(controlPassword);
  const redact = createRedactor(() => secrets);
  const logger = createLogger({ level: config.log_level, redact });

  const codecs = await loadCodecs();
  const warmMs = warmUpCodecs(codecs, config.images.webp);
  logger.debug("image codecs ready", { warm_up_ms: warmMs });

  const demo = config.upstream.url === undefined;
  const scripted = demo ? createScriptedUpstream({ readPixel: createPixelReader(codecs), defaultModel: config.upstream.model }) : undefined;
  const upstream = createUpstreamClient({
    baseUrl: config.upstream.url ?? "http://scripted-upstream.invalid/v1",
    apiKey: options.secrets.upstreamApiKey,
    retry: config.upstream.retry,
    timeoutMs: config.upstream.timeout_ms,
    newId: ids.callId,
    clock,
    // The demo model runs in-process: no socket, nothing leaves the machine.
    ...(scripted ? { fetch: ((input: string | URL | Request, init?: RequestInit) => scripted.fetch(new Request(input as string, init))) as typeof fetch } : {}),
  });

  const shutdownController = new AbortController();
  let shuttingDown = false;
  let server: ReturnType<typeof Bun.serve> | undefined;
  const { hostname, port } = parseListen(config.listen);
  const baseUrl = () => `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${server?.port ?? port}`;

  const episodes = createEpisodeStore({
    config,
    dataDir: resolve(config.data_dir),
    defaultManifest: manifestSchema.parse(defaultManifestJson),
    imageCache: config.images.cache,
    ids,
    clock,
    redact,
    registerSecret,
    baseUrl,
  });

  const ingress: IngressDeps = {
    episodes,
    logger,
    clock,
    ids,
    exchange: {
      upstream,
      images: { codecs, settings: config.images.webp },
      sizeLimits: config.images.limits,
      imageInput: config.upstream.image_input,
      parallelToolCalls: config.upstream.parallel_tool_calls,
      maxOutputTokens: config.upstream.max_output_tokens,
      logger,
      shutdownSignal: shutdownController.signal,
    },
  };

  let resolveClosed: (code: number) => void = () => {};
  const closed = new Promise<number>((r) => {
    resolveClosed = r;
  });

  async function shutdown(reason: string): Promise<number> {
    if (shuttingDown) return closed;
    shuttingDown = true;
    logger.info("shutting down", { reason, drain_deadline_ms: config.shutdown.drain_deadline_ms });
    shutdownController.abort(new Error(`shutdown: ${reason}`));
    const all = episodes.list();
    for (const episode of all) episode.ledger.close();
    const drain = Promise.all(
      all.map(async (episode) => {
        const [ledger] = await Promise.all([episode.ledger.drain(), Promise.allSettled([...episode.inFlight])]);
        return { episode, unfinished: ledger.unfinished };
      }),
    );
    const deadline = new Promise<"deadline">((r) => setTimeout(() => r("deadline"), config.shutdown.drain_deadline_ms));
    const outcome = await Promise.race([drain, deadline]);
    const complete = outcome !== "deadline";
    for (const episode of all) {
      const unfinished = complete ? (outcome.find((o) => o.episode === episode)?.unfinished ?? []) : ["drain deadline overrun"];
      episode.persist();
      episode.records.freeze({ reason, drain: complete ? "complete" : "deadline_overrun", complete, unfinished, state: episode.state });
    }
    server?.stop(true);
    if (!complete) logger.error("cleanup failure: drain overran its deadline; records are frozen but may be incomplete", { deadline_ms: config.shutdown.drain_deadline_ms });
    else logger.info("shutdown complete");
    const code = complete ? 0 : 3;
    resolveClosed(code);
    return code;
  }

  const app = createApp({
    ...ingress,
    control: { episodes, controlPassword, shutdown: () => void shutdown("control API") },
    version: options.version,
    demoUpstream: demo,
    bodyLimitBytes: config.body_limit_bytes,
    isShuttingDown: () => shuttingDown,
    episodeRoutes: episodeRouteGroups,
  });

  server = Bun.serve({ hostname, port, fetch: (req, srv) => app.fetch(req, { server: srv }), idleTimeout: 0 });
  logger.info("listening", { url: baseUrl(), data_dir: resolve(config.data_dir), demo_upstream: demo });
  if (demo) {
    out("");
    out("  *** DEMO MODEL: no URA_UPSTREAM_URL set — answering with the embedded scripted upstream, not Qwen ***");
  }
  out(`ura-sidecar ${options.version} listening on ${baseUrl()}`);
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

  return { app, server, episodes, shutdown, closed, baseUrl, controlPassword, defaultEpisode, scripted, logger };
}

export type Sidecar = Awaited<ReturnType<typeof startSidecar>>;
