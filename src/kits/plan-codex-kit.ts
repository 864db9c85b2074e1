/**
 * Codex CLI kit (docs/clients.md, docs/client-observations.md): its own CODEX_HOME
 * (outside /tmp) with config.toml naming the `ura` Responses provider and the `ura`
 * MCP server; both credentials are read from environment variables Codex is told
 * about (`env_key`, `bearer_token_env_var`). `exec` mode, update checks,
 * analytics and plugins off. A model name Codex does not know keeps MCP tools
 * out of its `tool_search`. For such a name Codex has no metadata ("Model metadata for
 * `ura-qwen` not found. Defaulting to fallback metadata"): the kit gives it the episode
 * model's window (`model_context_window`) and the point to compact at
 * (`model_auto_compact_token_limit`, model-limits.ts). A `model_catalog_json` would also
 * carry modalities, but its entries need Codex's whole ModelInfo (shell type, reasoning
 * levels, …): not written.
 */
import { join } from "node:path";
import {
  clientModelName,
  commonKitParts,
  type KitInput,
  type KitPlan,
  modelWaitMs,
  toolCallTimeoutMs,
} from "./kit-plan.ts";
import { compactAtTokens } from "./model-limits.ts";

const tomlString = (s: string) => JSON.stringify(s);

export function planCodexKit(input: KitInput): KitPlan {
  const { dir, episode } = input;
  const common = commonKitParts(dir);
  const model = input.model ?? clientModelName;
  const codexHome = join(dir, "codex-home");
  const limits = episode.model_capabilities;
  const configToml = [
    `model = ${tomlString(model)}`,
    `model_provider = "ura"`,
    ...(limits
      ? [
          `model_context_window = ${limits.max_input_tokens}`,
          `model_auto_compact_token_limit = ${compactAtTokens(limits)}`,
        ]
      : []),
    "check_for_update_on_startup = false",
    "",
    "[analytics]",
    "enabled = false",
    "",
    "[model_providers.ura]",
    `name = "ura"`,
    `base_url = ${tomlString(episode.urls.responses)}`,
    `wire_api = "responses"`,
    `env_key = "URA_KEY"`,
    // Between two SSE events (default 5 min): past the sidecar's deadline.
    `stream_idle_timeout_ms = ${modelWaitMs(episode)}`,
    "",
    "[mcp_servers.ura]",
    `url = ${tomlString(episode.urls.mcp)}`,
    `bearer_token_env_var = "URA_MCP_TOKEN"`,
    // Codex's own limit is 60 s: a longer robot action would come back to the model as a timeout.
    `tool_timeout_sec = ${Math.ceil(toolCallTimeoutMs(episode) / 1000)}`,
    "",
  ].join("\n");
  return {
    client: "codex",
    dirs: [...common.dirs, codexHome],
    files: [{ path: join(codexHome, "config.toml"), content: configToml }],
    env: { ...common.env, CODEX_HOME: codexHome },
    credentials: { URA_KEY: episode.ingress_key, URA_MCP_TOKEN: episode.mcp_token },
    bin: input.bin,
    args: [
      "exec",
      "--skip-git-repo-check",
      "--dangerously-bypass-approvals-and-sandbox",
      "--json",
      "--disable",
      "plugins",
      { prompt: "whole" },
    ],
    cwd: common.cwd,
    model,
  };
}
