/**
 * Model-visible tool names → manifest tool names. Each client shows the model
 * the MCP tool under its own scheme: OpenCode `ura_observe`, Gemini CLI
 * `mcp_ura_observe`, Claude Code `mcp__ura__observe`, Codex the namespace
 * `mcp__ura` (flattened by the Responses ingress to `mcp__ura__observe`).
 */
export function modelNameSchemes(server: string, tool: string): string[] {
  return [`${server}_${tool}`, `mcp_${server}_${tool}`, `mcp__${server}__${tool}`];
}

/** The manifest tool a model-visible name refers to, or undefined for a client's own tools. */
export function manifestToolFor(
  modelName: string,
  server: string,
  tools: readonly string[],
): string | undefined {
  for (const prefix of [`mcp__${server}__`, `mcp_${server}_`, `${server}_`]) {
    if (modelName.startsWith(prefix)) {
      const tool = modelName.slice(prefix.length);
      if (tools.includes(tool)) return tool;
    }
  }
  return undefined;
}
