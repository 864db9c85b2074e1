/**
 * The whole sidecar app in process (tests only): `createApp` with every route
 * group (control, the three ingresses, MCP), the real exchange pipeline and the
 * scripted upstream called without a socket. Tests drive it with `app.request()`;
 * `serve()` puts it on a loopback port when a real socket is needed. Composed
 * by `src/server/compose.ts` exactly as the binary is, with a debug logger
 * whose lines are kept for inspection. Also the reader of a streamed
 * response's SSE events such tests share.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConfigInput, configSchema } from "../../src/config/schema.ts";
import type { Episode } from "../../src/episodes/episode.ts";
import type { EpisodeOptions } from "../../src/episodes/episode-options.ts";
import { type Codecs, loadCodecs } from "../../src/images/codecs.ts";
import type { Ids } from "../../src/lib/ids.ts";
import type { OffThreadSha256 } from "../../src/lib/sha256-off-thread.ts";
import type { ScriptedUpstream } from "../../src/scripted-upstream/create-scripted-upstream.ts";
import type { EpisodeRouteGroup } from "../../src/server/app.ts";
import { type Composition, composeApp } from "../../src/server/compose.ts";
import { readSse } from "../../src/sse/read-sse.ts";

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
  /** Route groups mounted after the shipped ones (a spoke under test). */
  episodeRoutes?: readonly EpisodeRouteGroup[];
  /** Where request bodies' long strings are hashed (default: the sidecar's worker). */
  hashing?: OffThreadSha256;
};

/** The whole sidecar composed in this process, on the scripted upstream; served on a port only when asked. */
export interface InProcessSidecar
  extends Pick<
    Composition,
    "app" | "config" | "dataDir" | "episodes" | "secrets" | "imageCache" | "knownTexts" | "memory"
  > {
  scripted: ScriptedUpstream;
  /** Every log line written, in order. */
  logLines: string[];
  createEpisode(episodeOptions?: EpisodeOptions): Episode;
  /** Serves the app on a loopback port (once); returns its origin. */
  serve(): string;
  stop(): void;
}

export async function createInProcessSidecar(options: InProcessOptions = {}): Promise<InProcessSidecar> {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-in-process-"));
  const input = options.config ?? {};
  const config = configSchema.parse({
    ...input,
    data_dir: dataDir,
    upstream: { ...input.upstream, retry: { max_attempts: 1, ...input.upstream?.retry } },
  });
  const logLines: string[] = [];
  let server: ReturnType<typeof Bun.serve> | undefined;
  const origin = () => `http://127.0.0.1:${server?.port ?? 0}`;
  const composed = await composeApp({
    config,
    secrets: { upstreamApiKey: "sk-in-process-upstream", controlPassword: inProcessControlPassword },
    version: "test",
    codecs: testCodecs,
    baseUrl: origin,
    logLevel: "debug",
    logWrite: (line) => logLines.push(line),
    ...(options.upstreamFetch ? { upstreamFetch: options.upstreamFetch } : {}),
    ...(options.ids ? { ids: options.ids } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.episodeRoutes ? { episodeRoutes: options.episodeRoutes } : {}),
    ...(options.hashing ? { hashing: options.hashing } : {}),
  });
  const { app, episodes } = composed;
  const scripted = composed.scripted;
  if (!scripted) throw new Error("the in-process sidecar runs the scripted upstream (no upstream.url)");
  return {
    app,
    config,
    dataDir,
    episodes,
    scripted,
    logLines,
    secrets: composed.secrets,
    imageCache: composed.imageCache,
    knownTexts: composed.knownTexts,
    /** The memory reclaimer the app tells of each request (a test may wrap its methods). */
    memory: composed.memory,
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
      return origin();
    },
    stop(): void {
      composed.abortUpstream("test over");
      server?.stop(true);
    },
  };
}

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

/**
 * A fresh in-process sidecar with one episode, and `post(path, body, headers?)` to a
 * path below that episode (e.g. `/anthropic/v1/messages`), by default with the
 * episode's key presented the way the client presents it.
 */
export async function episodeInProcess(presentKey: (key: string) => Record<string, string>) {
  const { app, scripted, createEpisode } = await createInProcessSidecar();
  const episode = createEpisode();
  const post = (path: string, body: unknown, headers = presentKey(episode.ingressKey)) =>
    postJson(app, `/e/${episode.id}${path}`, body, headers);
  return { app, episode, scripted, post };
}
