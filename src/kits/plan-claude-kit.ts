/**
 * Claude Code kit (docs/clients.md, docs/client-observations.md): print mode with
 * stream-json output, only the `ura` MCP server (`--strict-mcp-config`), its own
 * config dir, telemetry, updater and nonessential traffic off. The MCP token is a
 * `${URA_MCP_TOKEN}` reference that Claude Code expands in mcp.json.
 */
import { join } from "node:path";
import {
  clientModelName,
  commonKitParts,
  jsonFile,
  type KitInput,
  type KitPlan,
  mcpTokenReference,
  toolCallTimeoutMs,
} from "./kit-plan.ts";

export function planClaudeKit(input: KitInput): KitPlan {
  const { dir, episode } = input;
  const common = commonKitParts(dir);
  const model = input.model ?? clientModelName;
  const mcpConfig = join(dir, "mcp.json");
  const toolTimeoutMs = toolCallTimeoutMs(episode);
  return {
    client: "claude",
    dirs: common.dirs,
    files: [
      jsonFile(mcpConfig, {
        mcpServers: {
          ura: {
            type: "http",
            url: episode.urls.mcp,
            headers: { Authorization: `Bearer ${mcpTokenReference}` },
            timeout: toolTimeoutMs,
            // The robot's tools are in the prompt from the first turn, never deferred behind
            // Claude Code's tool search (a model would first have to find them; docs/clients.md).
            alwaysLoad: true,
          },
        },
      }),
    ],
    env: {
      ...common.env,
      CLAUDE_CONFIG_DIR: join(common.home, ".claude"),
      ANTHROPIC_BASE_URL: episode.urls.anthropic,
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      // Over HTTP it also gives up on a call silent for 5 min; the sidecar sends no progress while a robot acts.
      CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT: String(toolTimeoutMs),
      // --dangerously-skip-permissions is refused as root unless the CLI is told it runs in a sandbox.
      IS_SANDBOX: "1",
    },
    credentials: { ANTHROPIC_API_KEY: episode.ingress_key, URA_MCP_TOKEN: episode.mcp_token },
    bin: input.bin,
    args: [
      "-p",
      { prompt: "whole" },
      "--output-format",
      "stream-json",
      "--verbose",
      "--model",
      model,
      "--mcp-config",
      mcpConfig,
      "--strict-mcp-config",
      "--dangerously-skip-permissions",
    ],
    cwd: common.cwd,
    model,
  };
}
