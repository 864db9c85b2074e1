/**
 * Which pinned client (and which version of it) sent a request, from its
 * User-Agent and the patterns in manifests/clients/. The version is the first
 * `x.y.z` in the header; Gemini CLI's MCP requests say only `node`, which
 * identifies the client but carries no version.
 */
import { type ClientManifest, type ClientName, clientManifests, clientNames } from "./client-manifests.ts";

export type DetectedClient = { client: ClientName; version: string | null };

const versionPattern = /\d+\.\d+\.\d+/;

export function detectClient(
  userAgent: string | null | undefined,
  side: "model" | "mcp",
  manifests: Record<ClientName, ClientManifest> = clientManifests,
): DetectedClient | undefined {
  if (!userAgent) return undefined;
  for (const client of clientNames) {
    const m = manifests[client];
    const pattern = side === "model" ? m.user_agent_pattern : m.mcp_user_agent_pattern;
    if (new RegExp(pattern).test(userAgent)) {
      return { client, version: versionPattern.exec(userAgent)?.[0] ?? null };
    }
  }
  return undefined;
}
