/**
 * The binary's server: starts the image conversion workers, composes the app
 * (compose.ts), listens, starts shipping, and prints the banner (demo model
 * warning, URL, restored episodes, a generated control password, the default
 * episode). The workers load and warm their codecs while the rest starts and
 * after the socket opens: /health/ready answers 503 until they are warm, and an
 * image that arrives sooner waits in their queue behind the warm-up.
 */
import { join, resolve } from "node:path";
import type { Secrets } from "../config/load-config.ts";
import { ConfigError, parseListen } from "../config/load-config.ts";
import type { Config } from "../config/schema.ts";
import { secretWeakness } from "../config/secret-strength.ts";
import type { Episode } from "../episodes/episode.ts";
import { episodeUrls } from "../episodes/episode-store.ts";
import { loadCodecsOnFirstUse } from "../images/codecs.ts";
import { defaultWorkerCount } from "../images/conversion-pool.ts";
import { startImageConversion } from "../images/start-image-conversion.ts";
import type { Ids } from "../lib/ids.ts";
import { lockDataDir } from "../records/data-dir-lock.ts";
import { type Composition, composeApp } from "./compose.ts";

export type StartOptions = {
  config: Config;
  secrets: Secrets;
  version: string;
  out: (line: string) => void;
  ids?: Ids;
  clock?: () => number;
  /** Where log lines go (default: stderr); `validate` keeps them in a file. */
  logWrite?: (line: string) => void;
  /** Where shipping reads its AWS_* credentials (default: process.env). */
  env?: Record<string, string | undefined>;
};

/** A sidecar listening: its composition, its server and the URL it answers on. */
export interface Sidecar extends Composition {
  server: ReturnType<typeof Bun.serve>;
  baseUrl(): string;
  /** The episode --default-episode created, when asked for. */
  defaultEpisode: Episode | undefined;
}

export async function startSidecar(options: StartOptions): Promise<Sidecar> {
  const { config, out } = options;
  const weak = [
    secretWeakness("URA_UPSTREAM_API_KEY", options.secrets.upstreamApiKey),
    secretWeakness("URA_CONTROL_PASSWORD", options.secrets.controlPassword),
  ].filter((problem) => problem !== undefined);
  if (weak.length > 0) throw new ConfigError(weak);
  // Before anything reads or writes the data directory: one sidecar per directory.
  const dataDirLock = lockDataDir(resolve(config.data_dir));
  // First, so that the codecs' compile and the warm-up (a real-sized frame: the first
  // encode after loading costs several later ones) overlap everything below.
  const conversion = startImageConversion(config.images.workers ?? defaultWorkerCount(), config.images.webp);
  let codecsWarmed = false;
  let converterClosed = false;
  const warmUp = conversion.warmedUp.then(
    (times) => {
      codecsWarmed = true;
      return { times };
    },
    (error: Error) => ({ error }),
  );
  let server: ReturnType<typeof Bun.serve> | undefined;
  let stopCollecting = () => {};
  const { hostname, port } = parseListen(config.listen);
  const baseUrl = () =>
    `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${server?.port ?? port}`;
  const composed = await composeApp({
    ...options,
    codecs: loadCodecsOnFirstUse(),
    codecsWarmed: () => codecsWarmed,
    converter: conversion.converter,
    closeConverter: () => {
      converterClosed = true;
      return conversion.close();
    },
    baseUrl,
    stopServer: () => {
      stopCollecting();
      server?.stop(true);
      dataDirLock.release();
    },
  }).catch(async (error: unknown) => {
    converterClosed = true;
    await conversion.close();
    throw error;
  });
  const { app, episodes, logger, restored, demo, dataDir, controlPassword, shipping, memory } = composed;
  stopCollecting = memory.stop;
  void warmUp.then((outcome) => {
    if ("times" in outcome)
      logger.debug("image codecs ready", {
        warm_up_ms: outcome.times.warmUpMs,
        instantiate_ms: outcome.times.instantiateMs,
      });
    // Readiness stays 503 naming the codecs; each conversion then fails on its own.
    else if (!converterClosed)
      logger.error("image codecs failed to warm up", { message: outcome.error.message });
  });

  server = Bun.serve({
    hostname,
    port,
    fetch: (req, srv) => memory.track(() => app.fetch(req, { server: srv })),
    // Per request, the app lifts it while a route waits on the upstream or the robot
    // and sets it again for the answer (src/server/request-timeouts.ts).
    idleTimeout: config.server.idle_timeout_seconds,
    // The app's body limit (body_limit_bytes) refuses every oversized body in the client's
    // envelope, from its declared length before reading it, or while reading a streamed one;
    // the server's own (128 MiB by default) would cut a long history off with a bare 413.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
  });
  logger.info("listening", { url: baseUrl(), data_dir: dataDir, demo_upstream: demo });
  if (demo) {
    out("");
    out(
      "  *** DEMO MODEL: no URA_UPSTREAM_URL set — answering with the embedded scripted upstream, not Qwen ***",
    );
    const profile = config.upstream.scripted_profile;
    if (profile !== undefined && profile !== "instant")
      out(
        `  *** upstream profile ${typeof profile === "string" ? profile : JSON.stringify(profile)}: slow answers, throttling and failures on purpose ***`,
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

  let defaultEpisode: Episode | undefined;
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
    out(`  records                    ${join(dataDir, "episodes", defaultEpisode.id)}`);
  }
  return { ...composed, server, baseUrl, defaultEpisode };
}
