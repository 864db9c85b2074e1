/**
 * Which client an episode is really talking to, and whether its MCP side is up.
 * Every model request passes through checkModelRequest (from authenticateIngress):
 *   - its User-Agent is matched against the pinned clients (manifests/clients/);
 *     with `require_pinned_client` another client, or a version not among the
 *     client's proven versions (the pin and every other version that passed the
 *     end-to-end suite), is refused (400);
 *   - the client's own session id (the header its manifest names) is kept, so a
 *     lab can match the episode to the client's own logs;
 *   - a model request while the client never completed MCP `initialize` and
 *     `tools/list` is flagged: every client silently drops MCP tools on a wrong
 *     token (docs/clients.md). `mcp_required: "refuse"` refuses it (400) from the
 *     episode's second model request on — a client may send its first request
 *     (OpenCode's title) while its MCP handshake is still under way.
 */
import { type ClientManifest, type ClientName, clientManifests } from "../clients/client-manifests.ts";
import { type DetectedClient, detectClient } from "../clients/detect-client.ts";
import { SidecarError } from "../lib/errors.ts";
import type { ClientIdentityStatus } from "./episode-status.ts";

export type McpRequirement = "warn" | "refuse";
export type McpSeen = { initialized: boolean; tools_listed: boolean; user_agent?: string | undefined };

export type ClientIdentityInit = {
  episodeId: string;
  expected: ClientName | undefined;
  requirePinned: boolean;
  mcpRequired: McpRequirement;
  warn?: (message: string, fields: Record<string, unknown>) => void;
  /** The manifests to judge by (tests); the embedded ones by default. */
  manifests?: Record<ClientName, ClientManifest>;
};

/** Distinct session ids kept per episode; a client sending a new one on every request cannot grow the status. */
export const maxSessionIds = 16;
/** Longer header values are cut: an id, not a payload. */
const maxSessionIdLength = 200;

function label(d: DetectedClient): string {
  return `${d.client} ${d.version ?? "(no version)"}`;
}

/** Which client an episode sees on its model and MCP requests, checked against the one expected. */
export interface ClientIdentity {
  /** The client's own session id on a request (the header its manifest names), without noting it. */
  sessionIdOf(headers: Headers): string | undefined;
  /**
   * Called for every model request of the episode; throws `invalid_request` (400) when
   * it must be refused. Returns the client's own session id on it, when it sent one.
   */
  checkModelRequest(headers: Headers, mcp: McpSeen): string | undefined;
  /** The status as this process describes it: the session members are always there. */
  describe(mcp: McpSeen): ClientIdentityStatus & { session_ids: string[]; session_ids_beyond_limit: number };
}

export function createClientIdentity(init: ClientIdentityInit): ClientIdentity {
  const manifests = init.manifests ?? clientManifests;
  let modelUserAgent: string | undefined;
  let modelRequests = 0;
  let withoutMcp = 0;
  const sessionIds: string[] = [];
  let sessionHeader: string | undefined;
  let sessionIdsBeyondLimit = 0;

  /** The client's own session id on a request, by the headers of the client it is (or is expected to be). */
  function sessionOf(headers: Headers): { header: string; id: string } | undefined {
    const userAgent = headers.get("user-agent") ?? modelUserAgent;
    const client = detectClient(userAgent, "model", manifests)?.client ?? init.expected;
    if (client === undefined) return undefined;
    for (const header of manifests[client].session_headers) {
      const id = headers.get(header)?.trim().slice(0, maxSessionIdLength);
      if (id) return { header, id };
    }
    return undefined;
  }

  function noteSession(headers: Headers): string | undefined {
    const session = sessionOf(headers);
    if (session === undefined) return undefined;
    sessionHeader ??= session.header;
    if (!sessionIds.includes(session.id)) {
      if (sessionIds.length < maxSessionIds) sessionIds.push(session.id);
      else sessionIdsBeyondLimit += 1;
    }
    return session.id;
  }

  /** Why the client seen so far is not a proven version of the expected one; undefined when it is (or nothing was seen). */
  function unpinnedReason(mcp: McpSeen): string | undefined {
    const model = modelUserAgent === undefined ? undefined : detectClient(modelUserAgent, "model", manifests);
    const expected = init.expected ?? model?.client;
    if (modelUserAgent !== undefined && !model)
      return `the User-Agent ${JSON.stringify(modelUserAgent)} is not one of the pinned clients`;
    if (!expected) return undefined;
    const pin = manifests[expected];
    for (const [side, seen] of [
      ["model", model],
      [
        "MCP",
        mcp.user_agent === undefined ? undefined : (detectClient(mcp.user_agent, "mcp", manifests) ?? null),
      ],
    ] as const) {
      if (seen === undefined) continue;
      if (seen === null) return `the MCP User-Agent ${JSON.stringify(mcp.user_agent)} is not ${expected}'s`;
      if (seen.client !== expected)
        return `${side} requests come from ${label(seen)}, but this episode is for ${expected}`;
      if (seen.version !== null && !pin.proven_versions.includes(seen.version))
        return `${side} requests come from ${label(seen)}, not a proven version of ${pin.package} (proven: ${pin.proven_versions.join(", ")}; pinned ${pin.package}@${pin.version})`;
    }
    return undefined;
  }

  return {
    /** The client's own session id on a request (the header its manifest names), without noting it. */
    sessionIdOf(headers: Headers): string | undefined {
      return sessionOf(headers)?.id;
    },
    /**
     * Called for every model request of the episode; throws `invalid_request` (400) when
     * it must be refused. Returns the client's own session id on it, when it sent one.
     */
    checkModelRequest(headers: Headers, mcp: McpSeen): string | undefined {
      modelRequests += 1;
      modelUserAgent = headers.get("user-agent") ?? "";
      // Kept for refused requests too: they belong to the client's session as much.
      const session = noteSession(headers);
      if (init.requirePinned) {
        const reason = unpinnedReason(mcp);
        if (reason)
          throw new SidecarError(
            "invalid_request",
            `require_pinned_client: ${reason} (episode ${init.episodeId})`,
          );
      }
      if (mcp.initialized && mcp.tools_listed) return session;
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
      return session;
    },
    describe(mcp: McpSeen) {
      const model =
        modelUserAgent === undefined ? undefined : detectClient(modelUserAgent, "model", manifests);
      const mcpClient =
        mcp.user_agent === undefined ? undefined : detectClient(mcp.user_agent, "mcp", manifests);
      const expected = init.expected ?? model?.client;
      const reason = unpinnedReason(mcp);
      const flags = [
        ...(withoutMcp > 0 ? ["mcp_not_connected"] : []),
        ...(reason !== undefined ? ["unpinned_client"] : []),
      ];
      return {
        expected: expected ?? null,
        pinned_version: expected ? manifests[expected].version : null,
        proven_versions: expected ? manifests[expected].proven_versions : null,
        model_user_agent: modelUserAgent ?? null,
        model_client: model ?? null,
        mcp_client: mcpClient ?? null,
        /** A proven version of the expected client (require_pinned_client's test); null until a model request was seen. */
        pinned: modelUserAgent === undefined ? null : reason === undefined,
        unpinned_reason: reason ?? null,
        require_pinned_client: init.requirePinned,
        mcp_required: init.mcpRequired,
        mcp_connected: mcp.initialized && mcp.tools_listed,
        model_requests: modelRequests,
        model_requests_without_mcp: withoutMcp,
        /** The client's own session ids, in the order first seen (at most maxSessionIds). */
        session_ids: [...sessionIds],
        /** The header they came in; null when none came (Gemini CLI sends none). */
        session_header: sessionHeader ?? null,
        session_ids_beyond_limit: sessionIdsBeyondLimit,
        flags,
      };
    },
  };
}
