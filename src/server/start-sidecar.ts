/**
 * The binary's server: loads and warms the image codecs, composes the app
 * (compose.ts), listens, starts shipping, and prints the banner (demo model
 * warning, URL, restored episodes, a generated control password, the default
 * episode).
 */
import { join, resolve } from "node:path";
import type { Secrets } from "../config/load-config.ts";
import { ConfigError, parseListen } from "../config/load-config.ts";
import type { Config } from "../config/schema.ts";
import { secretWeakness } from "../config/secret-strength.ts";
import { episodeUrls } from "../episodes/episode-store.ts";
import type { Ids } from "../episodes/ids.ts";
import { loadCodecs } from "../images/codecs.ts";
import { defaultWorkerCount } from "../images/conversion-pool.ts";
import { startImageConversion } from "../images/start-image-conversion.ts";
import { lockDataDir } from "../records/data-dir-lock.ts";
import { composeApp } from "./compose.ts";

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

export async function startSidecar(options: StartOptions) {
  const { config, out } = options;
  const weak = [
    secretWeakness("URA_UPSTREAM_API_KEY", options.secrets.upstreamApiKey),
    secretWeakness("URA_CONTROL_PASSWORD", options.secrets.controlPassword),
  ].filter((problem) => problem !== undefined);
  if (weak.length > 0) throw new ConfigError(weak);
  // Before anything reads or writes the data directory: one sidecar per directory.
  const dataDirLock = lockDataDir(resolve(config.data_dir));
  // The demo model reads pixels with these codecs; exchanges convert in the worker pool,
  // each worker warmed up with a real-sized frame. The listener opens only after this
  // warm-up today; readiness still checks the flag so that a warm-up moved off the
  // start-up path can never serve exchanges cold.
  const codecs = await loadCodecs();
  let codecsWarmed = false;
  const conversion = await startImageConversion(
    config.images.workers ?? defaultWorkerCount(),
    config.images.webp,
  );
  const warmUpMs = conversion.warmUpMs;
  codecsWarmed = true;
  let server: ReturnType<typeof Bun.serve> | undefined;
  const { hostname, port } = parseListen(config.listen);
  const baseUrl = () =>
    `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${server?.port ?? port}`;
  const composed = await composeApp({
    ...options,
    codecs,
    codecsWarmed: () => codecsWarmed,
    converter: conversion.converter,
    closeConverter: () => conversion.close(),
    baseUrl,
    stopServer: () => {
      server?.stop(true);
      dataDirLock.release();
    },
  });
  const { app, episodes, logger, restored, demo, dataDir, controlPassword, shipping } = composed;
  logger.debug("image codecs ready", { warm_up_ms: warmUpMs });

  server = Bun.serve({
    hostname,
    port,
    fetch: (req, srv) => app.fetch(req, { server: srv }),
    idleTimeout: 0,
  });
  logger.info("listening", { url: baseUrl(), data_dir: dataDir, demo_upstream: demo });
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
    out(`  records                    ${join(dataDir, "episodes", defaultEpisode.id)}`);
  }
  return { ...composed, server, baseUrl, defaultEpisode };
}

export type Sidecar = Awaited<ReturnType<typeof startSidecar>>;
