/**
 * Which client an episode is really talking to, and whether its MCP side is up.
 * Every model request passes through checkModelRequest (from authenticateIngress):
 *   - its User-Agent is matched against the pinned clients (manifests/clients/);
 *     with `require_pinned_client` an unpinned client or version is refused (400);
 *   - a model request while the client never completed MCP `initialize` and
 *     `tools/list` is flagged: every client silently drops MCP tools on a wrong
 *     token (docs/clients.md). `mcp_required: "refuse"` refuses it (400) from the
 *     episode's second model request on — a client may send its first request
 *     (OpenCode's title) while its MCP handshake is still under way.
 */
import { type ClientName, clientManifests } from "../clients/client-manifests.ts";
import { type DetectedClient, detectClient } from "../clients/detect-client.ts";
import { SidecarError } from "../lib/errors.ts";

export type McpRequirement = "warn" | "refuse";
export type McpSeen = { initialized: boolean; tools_listed: boolean; user_agent?: string | undefined };

export type ClientIdentityInit = {
  episodeId: string;
  expected: ClientName | undefined;
  requirePinned: boolean;
  mcpRequired: McpRequirement;
  warn?: (message: string, fields: Record<string, unknown>) => void;
};

function label(d: DetectedClient): string {
  return `${d.client} ${d.version ?? "(no version)"}`;
}

export function createClientIdentity(init: ClientIdentityInit) {
  let modelUserAgent: string | undefined;
  let modelRequests = 0;
  let withoutMcp = 0;

  /** Why the client seen so far is not the pinned one; undefined when it is (or nothing was seen). */
  function unpinnedReason(mcp: McpSeen): string | undefined {
    const model = modelUserAgent === undefined ? undefined : detectClient(modelUserAgent, "model");
    const expected = init.expected ?? model?.client;
    if (modelUserAgent !== undefined && !model)
      return `the User-Agent ${JSON.stringify(modelUserAgent)} is not one of the pinned clients`;
    if (!expected) return undefined;
    const pin = clientManifests[expected];
    for (const [side, seen] of [
      ["model", model],
      ["MCP", mcp.user_agent === undefined ? undefined : (detectClient(mcp.user_agent, "mcp") ?? null)],
    ] as const) {
      if (seen === undefined) continue;
      if (seen === null) return `the MCP User-Agent ${JSON.stringify(mcp.user_agent)} is not ${expected}'s`;
      if (seen.client !== expected)
        return `${side} requests come from ${label(seen)}, but this episode is for ${expected}`;
      if (seen.version !== null && seen.version !== pin.version)
        return `${side} requests come from ${label(seen)}; the pinned version is ${pin.package}@${pin.version}`;
    }
    return undefined;
  }

  return {
    /** Called for every model request of the episode; throws `invalid_request` (400) when it must be refused. */
    checkModelRequest(headers: Headers, mcp: McpSeen): void {
      modelRequests += 1;
      modelUserAgent = headers.get("user-agent") ?? "";
      if (init.requirePinned) {
        const reason = unpinnedReason(mcp);
        if (reason)
          throw new SidecarError(
            "invalid_request",
            `require_pinned_client: ${reason} (episode ${init.episodeId})`,
          );
      }
      if (mcp.initialized && mcp.tools_listed) return;
      withoutMcp += 1;
      const message = `the MCP side of episode ${init.episodeId} never connected: no MCP initialize and tools/list with this episode's token before model request ${modelRequests} (a client given a wrong MCP token silently runs without the robot tools)`;
      // Logged for the first two such requests only (the first may just race the MCP
      // handshake); the status keeps counting, and a log line per request would flood.
      if (withoutMcp <= 2)
        init.warn?.(message, {
          episode: init.episodeId,
          mcp_initialized: mcp.initialized,
          mcp_tools_listed: mcp.tools_listed,
        });
      if (init.mcpRequired === "refuse" && modelRequests >= 2)
        throw new SidecarError("invalid_request", `${message}; refused (mcp_required: refuse)`);
    },
    describe(mcp: McpSeen) {
      const model = modelUserAgent === undefined ? undefined : detectClient(modelUserAgent, "model");
      const mcpClient = mcp.user_agent === undefined ? undefined : detectClient(mcp.user_agent, "mcp");
      const expected = init.expected ?? model?.client;
      const reason = unpinnedReason(mcp);
      const flags = [
        ...(withoutMcp > 0 ? ["mcp_not_connected"] : []),
        ...(reason !== undefined ? ["unpinned_client"] : []),
      ];
      return {
        expected: expected ?? null,
        pinned_version: expected ? clientManifests[expected].version : null,
        model_user_agent: modelUserAgent ?? null,
        model_client: model ?? null,
        mcp_client: mcpClient ?? null,
        /** null until a model request was seen. */
        pinned: modelUserAgent === undefined ? null : reason === undefined,
        unpinned_reason: reason ?? null,
        require_pinned_client: init.requirePinned,
        mcp_required: init.mcpRequired,
        mcp_connected: mcp.initialized && mcp.tools_listed,
        model_requests: modelRequests,
        model_requests_without_mcp: withoutMcp,
        flags,
      };
    },
  };
}

export type ClientIdentity = ReturnType<typeof createClientIdentity>;
