/**
 * Model-visible tool names ↔ manifest tool names. Each client shows the model an
 * MCP tool under its own scheme (`tool_name_scheme` in manifests/clients/):
 * OpenCode `ura_observe`, Gemini CLI `mcp_ura_observe`, Claude Code and Codex
 * `mcp__ura__observe`. An episode does not always know its client in advance, so
 * a name is mapped back under every pinned client's scheme.
 */
import { clientManifests, clientNames } from "./client-manifests.ts";

/** The name a client with `scheme` shows the model for `tool` of MCP server `server`. */
export function modelToolName(scheme: string, server: string, tool: string): string {
  return scheme.replace("{server}", server).replace("{tool}", tool);
}

/** Name prefixes of every pinned scheme for `server`, longest first so `mcp__ura__` wins over `ura_`-like overlaps. */
function prefixesFor(server: string): string[] {
  const prefixes = clientNames.map((client) =>
    modelToolName(clientManifests[client].tool_name_scheme, server, ""),
  );
  return [...new Set(prefixes)].sort((a, b) => b.length - a.length);
}

/** The manifest tool a model-visible name refers to, or undefined for a client's own tools. */
export function manifestToolFor(
  modelName: string,
  server: string,
  tools: readonly string[],
): string | undefined {
  for (const prefix of prefixesFor(server)) {
    if (modelName.startsWith(prefix)) {
      const tool = modelName.slice(prefix.length);
      if (tools.includes(tool)) return tool;
    }
  }
  return undefined;
}
