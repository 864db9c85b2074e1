/**
 * The protocol side of the `ura` MCP server of one episode (one instance per
 * MCP session): tools from the manifest with their input JSON schema served
 * verbatim, calls handled by handleToolCall. Built on the SDK's low-level
 * `Server`, because `McpServer` wants zod input shapes and strips unknown
 * arguments before a handler could read the OpenCode plugin's `_callID`.
 * `notifications/cancelled` abandons nothing admitted: OpenCode sends one after every
 * completed call, and robot work already admitted is never abandoned half-way. It
 * only withdraws a call still awaiting an operator's approval (as do the session
 * closing and the client's connection for the call going away, connection-signal.ts): that call is rejected and never runs, since its answer could no longer
 * reach the model (a client that gave up on it sends one; docs/approvals.md). A call that
 * carries `_meta.progressToken` gets progress notifications while it is held
 * (tool-call-progress.ts), on its own response stream, never after its result.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { Episode } from "../episodes/episode.ts";
import { errorMessage } from "../lib/error-message.ts";
import type { Logger } from "../lib/logger.ts";
import { connectionSignal } from "./connection-signal.ts";
import { handleToolCall } from "./handle-tool-call.ts";
import { createToolCallProgress } from "./tool-call-progress.ts";
import type { ArgumentsCheck } from "./tool-validators.ts";

export type UraServerDeps = {
  episode: Episode;
  checks: ReadonlyMap<string, ArgumentsCheck>;
  logger: Logger;
  version: string;
  /** Tool calls of this server's session still running (a session with one is never evicted). */
  calls?: { running: number };
  /** mcp_progress_interval_ms: between two progress notifications of a held call (0 = on state changes only). */
  progressIntervalMs: number;
  clock: () => number;
};

export function createUraServer(deps: UraServerDeps): Server {
  const { episode } = deps;
  const server = new Server(
    { name: episode.manifest.server, version: deps.version },
    { capabilities: { tools: { listChanged: false } } },
  );
  /** Each held call's withdrawal, by its JSON-RPC request id. */
  const withdrawals = new Map<string | number, AbortController>();
  server.setNotificationHandler(CancelledNotificationSchema, (notification) => {
    const id = notification.params.requestId;
    if (id !== undefined) withdrawals.get(id)?.abort(notification.params.reason);
  });
  server.setRequestHandler(ListToolsRequestSchema, () => {
    episode.mcpToolsListed();
    return {
      tools: episode.manifest.tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.input_schema as { type: "object"; [key: string]: unknown },
      })),
    };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    if (deps.calls) deps.calls.running += 1;
    const withdrawal = new AbortController();
    withdrawals.set(extra.requestId, withdrawal);
    // The SDK aborts extra.signal when the session's transport closes; the connection's when the client is gone.
    const closed = () => withdrawal.abort("the client's MCP session or connection closed");
    extra.signal.addEventListener("abort", closed, { once: true });
    const connection = connectionSignal();
    connection?.addEventListener("abort", closed, { once: true });
    const progress = createToolCallProgress({
      token: request.params._meta?.progressToken,
      intervalMs: deps.progressIntervalMs,
      clock: deps.clock,
      send: (params) => {
        extra
          .sendNotification({ method: "notifications/progress", params })
          .catch((error: unknown) =>
            deps.logger.debug("progress notification not sent", { message: errorMessage(error) }),
          );
      },
    });
    try {
      return await handleToolCall(
        {
          episode,
          checks: deps.checks,
          logger: deps.logger,
          onState: (state, jobId) => progress.enter(state, jobId),
          withdrawn: withdrawal.signal,
        },
        {
          name: request.params.name,
          ...(request.params.arguments ? { arguments: request.params.arguments } : {}),
          ...(request.params._meta ? { _meta: request.params._meta as Record<string, unknown> } : {}),
        },
      );
    } finally {
      progress.stop();
      withdrawals.delete(extra.requestId);
      extra.signal.removeEventListener("abort", closed);
      connection?.removeEventListener("abort", closed);
      if (deps.calls) deps.calls.running -= 1;
    }
  });
  return server;
}
