/**
 * The whole sidecar app in process (tests only): `createApp` with every route
 * group (control, the three ingresses, MCP), the real exchange pipeline and the
 * scripted upstream called without a socket. Tests drive it with `app.request()`;
 * `serve()` puts it on a loopback port when a real socket is needed. Built the
 * way `src/server/start-sidecar.ts` composes the binary, with a quiet logger
 * whose lines are kept for inspection. Also the reader of a streamed
 * response's SSE events such tests share.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import defaultManifestJson from "../../manifests/tools/robot.json" with { type: "json" };
import { createApp } from "../../src/app.ts";
import { type ConfigInput, configSchema } from "../../src/config/schema.ts";
import type { Episode } from "../../src/episodes/episode.ts";
import type { EpisodeOptions } from "../../src/episodes/episode-options.ts";
import { createEpisodeStore } from "../../src/episodes/episode-store.ts";
import { createRandomIds, type Ids } from "../../src/episodes/ids.ts";
import { type Codecs, loadCodecs } from "../../src/images/codecs.ts";
import { createImageCache } from "../../src/images/image-cache.ts";
import { convertOnThisThread } from "../../src/images/png-to-webp.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { manifestSchema } from "../../src/manifest/manifest-schema.ts";
import { createBlobStore } from "../../src/records/blob-store.ts";
import {
  createScriptedUpstream,
  type ScriptedUpstream,
} from "../../src/scripted-upstream/create-scripted-upstream.ts";
import { createPixelReader } from "../../src/scripted-upstream/pixel-reader.ts";
import { episodeRouteGroups } from "../../src/server/episode-route-groups.ts";
import { readSse } from "../../src/sse/read-sse.ts";
import { createUpstreamClient } from "../../src/upstream/upstream-client.ts";

export const inProcessControlPassword = "in-process-control-password-0123";

let sharedCodecs: Promise<Codecs> | undefined;
/** The WASM codecs, loaded once per test process. */
export function testCodecs(): Promise<Codecs> {
  sharedCodecs ??= loadCodecs();
  return sharedCodecs;
}

export type InProcessOptions = {
  /** Settings as in a config file; the upstream retry defaults to one attempt. */
  config?: ConfigInput;
  /** Answers upstream requests instead of the scripted upstream (e.g. a huge reply). */
  upstreamFetch?: (request: Request) => Response | Promise<Response>;
  /** Identifiers and clock (a replay gives the ones that reproduce a recording). */
  ids?: Ids;
  clock?: () => number;
};

export async function createInProcessSidecar(options: InProcessOptions = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-in-process-"));
  const input = options.config ?? {};
  const config = configSchema.parse({
    ...input,
    data_dir: dataDir,
    upstream: { ...input.upstream, retry: { max_attempts: 1, ...input.upstream?.retry } },
  });
  const codecs = await testCodecs();
  const ids = options.ids ?? createRandomIds();
  const clock = options.clock ?? Date.now;
  const scripted: ScriptedUpstream = createScriptedUpstream({
    readPixel: createPixelReader(codecs),
    defaultModel: config.upstream.model,
  });
  const answer = options.upstreamFetch ?? scripted.fetch;
  const logLines: string[] = [];
  const secrets: string[] = [];
  const redact = (line: string) => line;
  const logger = createLogger({ level: "debug", redact, write: (line) => logLines.push(line) });
  let port = 0;
  const episodes = createEpisodeStore({
    config,
    dataDir,
    blobs: createBlobStore(dataDir),
    defaultManifest: manifestSchema.parse(defaultManifestJson),
    ids,
    clock,
    redact,
    registerSecret: (secret) => secrets.push(secret),
    baseUrl: () => `http://127.0.0.1:${port}`,
  });
  const shutdown = new AbortController();
  const app = createApp({
    episodes,
    logger,
    clock,
    ids,
    exchange: {
      upstream: createUpstreamClient({
        baseUrl: "http://scripted-upstream.invalid/v1",
        apiKey: "sk-in-process-upstream",
        retry: config.upstream.retry,
        timeoutMs: config.upstream.timeout_ms,
        newId: ids.callId,
        fetch: ((request: string | URL | Request, init?: RequestInit) =>
          answer(new Request(request as string, init))) as typeof fetch,
      }),
      images: {
        converter: convertOnThisThread(codecs),
        settings: config.images.webp,
        cache: createImageCache(config.images.cache_bytes),
      },
      sizeLimits: config.images.limits,
      imageInput: config.upstream.image_input,
      parallelToolCalls: config.upstream.parallel_tool_calls,
      maxOutputTokens: config.upstream.max_output_tokens,
      logger,
      shutdownSignal: shutdown.signal,
      redact,
    },
    control: { episodes, controlPassword: inProcessControlPassword, shutdown: () => {} },
    version: "test",
    demoUpstream: false,
    bodyLimitBytes: config.body_limit_bytes,
    isShuttingDown: () => false,
    episodeRoutes: episodeRouteGroups,
  });
  let server: ReturnType<typeof Bun.serve> | undefined;
  return {
    app,
    config,
    dataDir,
    blobs: createBlobStore(dataDir),
    episodes,
    scripted,
    logLines,
    secrets,
    createEpisode: (episodeOptions: EpisodeOptions = { max_turns: 0 }): Episode =>
      episodes.create(episodeOptions),
    /** Serves the app on a loopback port (once); returns its origin. */
    serve(): string {
      server ??= Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch: (req) => app.fetch(req),
        idleTimeout: 0,
      });
      port = server.port ?? 0;
      return `http://127.0.0.1:${port}`;
    },
    stop(): void {
      shutdown.abort(new Error("test over"));
      server?.stop(true);
    },
  };
}

export type InProcessSidecar = Awaited<ReturnType<typeof createInProcessSidecar>>;

/** The SSE events of a streamed response, in order, each with its JSON data parsed. */
export async function responseEvents(
  res: Response,
): Promise<{ event: string | undefined; data: Record<string, unknown> }[]> {
  const out = [];
  for await (const e of readSse(res.body as ReadableStream<Uint8Array>))
    out.push({ event: e.event, data: JSON.parse(e.data) as Record<string, unknown> });
  return out;
}

/** POSTs a body (JSON, or a raw string as is) to the app, with the client's headers. */
export function postJson(
  app: InProcessSidecar["app"],
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<Response> {
  return Promise.resolve(
    app.request(path, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    }),
  );
}
