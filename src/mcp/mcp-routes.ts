/**
 * The `ura` MCP server of each episode at /e/{episode}/mcp: Streamable HTTP
 * (the SDK's web-standard transport), stateful sessions (Codex ends its session
 * with DELETE; the others just leave), guarded by the episode's own bearer token
 * (constant-time compare; one episode's token never opens another) and a
 * Host/Origin check against DNS rebinding. With the manifest's `stop`, each request
 * counts as the client being there until its answer ends or the client leaves
 * (src/episodes/job-stopper.ts). See docs/design.md §6, docs/clients.md.
 */
import { randomUUID } from "node:crypto";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { Hono } from "hono";
import packageJson from "../../package.json" with { type: "json" };
import type { BodyEnv } from "../body/body-variables.ts";
import { defaultProgressIntervalMs } from "../config/schema.ts";
import type { Episode } from "../episodes/episode.ts";
import type { EpisodeStore } from "../episodes/episode-store.ts";
import { credentialMatches } from "../lib/credentials.ts";
import type { Logger } from "../lib/logger.ts";
import { checkHostAndOrigin } from "./check-host.ts";
import { withConnectionSignal } from "./connection-signal.ts";
import { createUraServer } from "./create-ura-server.ts";
import type { ToolChecks } from "./tool-validators.ts";

/**
 * Sessions kept per episode; when a client opens one more, the oldest session
 * without a tool call in flight is closed (closing one with a call running would
 * leave its client an empty answer for work the robot did). When every session
 * has a call in flight, the new session is refused (503) until one finishes.
 */
export const maxSessionsPerEpisode = 16;

type Session = {
  episodeId: string;
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  openedAt: number;
  calls: { running: number };
};

/** A JSON-RPC error answered outside any session (the transport's own envelope for such errors). */
export function jsonRpcError(
  status: number,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** What the MCP route group gets. */
export type McpRouteDeps = {
  episodes: EpisodeStore;
  logger: Logger;
  clock: () => number;
  /** The compiled argument validators of an episode's manifest (MCP tools/call). */
  toolChecks: ToolChecks;
  /**
   * body_limit_bytes: the largest request body on every route, MCP included, so a call
   * delivered with large arguments can always be called back (the MCP SDK's own default is 4 MiB).
   */
  bodyLimitBytes?: number;
  /** mcp_progress_interval_ms: between two progress notifications of a held MCP tool call. */
  mcpProgressIntervalMs?: number;
};

export function createMcpRoutes(deps: McpRouteDeps): Hono<BodyEnv> {
  const app = new Hono<BodyEnv>();
  const sessions = new Map<string, Session>();
  const listenHost = () => new URL(deps.episodes.baseUrl()).hostname;

  function closeSession(id: string, episode: Episode): void {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    episode.mcpSessionClosed();
    void session.server.close().catch(() => {});
  }

  async function openSession(episode: Episode, request: Request, body: unknown): Promise<Response> {
    const mine = [...sessions.entries()]
      .filter(([, s]) => s.episodeId === episode.id)
      .sort((a, b) => a[1].openedAt - b[1].openedAt);
    if (mine.length >= maxSessionsPerEpisode) {
      const idle = mine.find(([, s]) => s.calls.running === 0);
      if (!idle) {
        return jsonRpcError(
          503,
          `episode ${episode.id} has ${maxSessionsPerEpisode} MCP sessions (the limit), each with a tool call in flight; open a new session once one finishes`,
        );
      }
      closeSession(idle[0], episode);
    }
    const calls = { running: 0 };
    const server = createUraServer({
      episode,
      checks: deps.toolChecks(episode.manifest),
      logger: deps.logger,
      version: packageJson.version,
      calls,
      progressIntervalMs: deps.mcpProgressIntervalMs ?? defaultProgressIntervalMs,
      clock: deps.clock,
    });
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      ...(deps.bodyLimitBytes === undefined ? {} : { maxRequestBodySize: deps.bodyLimitBytes }),
      onsessioninitialized: (id) => {
        sessions.set(id, { episodeId: episode.id, transport, server, openedAt: deps.clock(), calls });
        episode.mcpSessionOpened();
      },
      onsessionclosed: (id) => closeSession(id, episode),
    });
    transport.onclose = () => {
      if (transport.sessionId) closeSession(transport.sessionId, episode);
    };
    await server.connect(transport);
    const response = await transport.handleRequest(request, { parsedBody: body });
    if (response.ok) {
      episode.mcpInitialized(request.headers.get("user-agent") ?? undefined);
    }
    return response;
  }

  app.all("/mcp", async (c) => {
    const episode = deps.episodes.get(c.req.param("episode") ?? "");
    const ended = episode.mcpRequestOpened();
    if (ended === undefined) return answerMcp(c.req.raw, episode);
    try {
      return whenAnswerEnds(await answerMcp(c.req.raw, episode), c.req.raw.signal, ended);
    } catch (error) {
      ended();
      throw error;
    }
  });

  async function answerMcp(request: Request, episode: Episode): Promise<Response> {
    const hostProblem = checkHostAndOrigin(request.headers, listenHost());
    if (hostProblem) return jsonRpcError(403, hostProblem);
    const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1];
    if (!credentialMatches(bearer, episode.mcpToken)) {
      deps.logger.warn("MCP request with a missing or wrong token", {
        episode: episode.id,
        method: request.method,
      });
      return jsonRpcError(401, `missing or wrong MCP bearer token for episode ${episode.id}`, {
        "www-authenticate": 'Bearer realm="ura"',
      });
    }

    const sessionId = request.headers.get("mcp-session-id");
    if (sessionId !== null) {
      const session = sessions.get(sessionId);
      if (!session || session.episodeId !== episode.id)
        return jsonRpcError(404, "Session not found: initialize a new one");
      return withConnectionSignal(request.signal, () => session.transport.handleRequest(request));
    }
    if (request.method !== "POST") return jsonRpcError(400, "Bad Request: no session; send initialize first");
    let body: unknown;
    try {
      body = await request.json();
    } catch {
      return new Response(
        JSON.stringify({
          jsonrpc: "2.0",
          error: { code: -32700, message: "Parse error: body is not JSON" },
          id: null,
        }),
        {
          status: 400,
          headers: { "content-type": "application/json" },
        },
      );
    }
    if (!isInitializeRequest(body))
      return jsonRpcError(400, "Bad Request: no session; send initialize first");
    return openSession(episode, request, body);
  }
  return app;
}

/** The same answer, calling `ended` once when its body was read to the end, failed, or the client left. */
function whenAnswerEnds(response: Response, signal: AbortSignal, ended: () => void): Response {
  signal.addEventListener("abort", ended, { once: true });
  if (response.body === null) {
    ended();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (next.done) {
          ended();
          controller.close();
        } else controller.enqueue(next.value);
      } catch (error) {
        ended();
        controller.error(error);
      }
    },
    cancel(reason) {
      ended();
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
