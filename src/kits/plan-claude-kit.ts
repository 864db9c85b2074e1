/**
 * Claude Code kit (docs/clients.md, docs/client-observations.md): print mode with
 * stream-json output, only the `ura` MCP server (`--strict-mcp-config`), its own
 * config dir, telemetry, updater and nonessential traffic off. The MCP token is a
 * `${URA_MCP_TOKEN}` reference that Claude Code expands in mcp.json. The model's limits
 * (launch info `model_capabilities`): a model id it does not know gets a 200K window and
 * 32K output unless CLAUDE_CODE_MAX_CONTEXT_TOKENS (honoured for a name not starting with
 * `claude-`) and CLAUDE_CODE_MAX_OUTPUT_TOKENS say otherwise; the window it is told is the
 * one at which its own compaction point (the window less its output and summary reserves)
 * is the others' (src/kits/claude-context-tokens.ts), larger than a small model's real
 * window, past which the sidecar's window guard keeps each request.
 * Gateway model discovery on: it lists the episode's model at start-up.
 */
import { join } from "node:path";
import { claudeContextTokens } from "./claude-context-tokens.ts";
import {
  clientModelName,
  commonKitParts,
  jsonFile,
  type KitInput,
  type KitPlan,
  mcpTokenReference,
  modelWaitMs,
  toolCallTimeoutMs,
} from "./kit-plan.ts";

export function planClaudeKit(input: KitInput): KitPlan {
  const { dir, episode } = input;
  const common = commonKitParts(dir);
  const model = input.model ?? clientModelName;
  const mcpConfig = join(dir, "mcp.json");
  const toolTimeoutMs = toolCallTimeoutMs(episode);
  const limits = episode.model_capabilities;
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
      // The request's wait for the response head (default 10 min) and its stream watchdog's
      // wait for an event (default 5 min; keepalive pings do not count): past the sidecar's deadline.
      API_TIMEOUT_MS: String(modelWaitMs(episode)),
      CLAUDE_STREAM_IDLE_TIMEOUT_MS: String(modelWaitMs(episode)),
      // After a stream error it would ask again without streaming: a request the sidecar
      // cannot keep alive, and a second try at an error that was final (docs/clients.md).
      CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK: "1",
      // --dangerously-skip-permissions is refused as root unless the CLI is told it runs in a sandbox.
      IS_SANDBOX: "1",
      CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY: "1",
      ...(limits
        ? {
            CLAUDE_CODE_MAX_CONTEXT_TOKENS: String(claudeContextTokens(limits)),
            CLAUDE_CODE_MAX_OUTPUT_TOKENS: String(limits.max_output_tokens),
          }
        : {}),
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
