/**
 * Gemini CLI kit (docs/clients.md, docs/client-observations.md): its own
 * GEMINI_CLI_HOME with settings.json (API-key auth, updates, usage statistics,
 * telemetry, loop detection and IDE off, the `ura` MCP server trusted), the
 * workspace trusted, and `-m` naming the episode's model exactly (without it the
 * CLI calls a routing classifier first). The MCP token is a `${URA_MCP_TOKEN}`
 * reference that Gemini CLI expands in settings. Gemini CLI compresses the chat when the
 * last prompt's token count reaches `model.compressionThreshold` × its token limit for
 * the model, which for any non-Gemini name is 1,048,576: the kit sets the threshold so
 * that the product is the episode model's compaction point (model-limits.ts).
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
import { compactAtTokens } from "./model-limits.ts";

/**
 * Gemini CLI compresses a long chat by asking a model alias of its own
 * (`chat-compression-default` for a model it does not know: gemini-3-pro-preview),
 * which the sidecar refuses as an unknown model, ending the episode in
 * provider_error. Every compression alias is pointed at the episode's model, so
 * the summary request is an ordinary exchange through the same route.
 */
const compressionAliasNames = [
  "chat-compression-default",
  "chat-compression-3-pro",
  "chat-compression-3-flash",
  "chat-compression-3.1-flash-lite",
  "chat-compression-2.5-pro",
  "chat-compression-2.5-flash",
  "chat-compression-2.5-flash-lite",
];
/** Gemini CLI's token limit for a model name it does not know (tokenLimit's default). */
const geminiDefaultTokenLimit = 1_048_576;

function compressionAliases(model: string): Record<string, { modelConfig: { model: string } }> {
  return Object.fromEntries(compressionAliasNames.map((alias) => [alias, { modelConfig: { model } }]));
}

export function planGeminiKit(input: KitInput): KitPlan {
  const { dir, episode } = input;
  const common = commonKitParts(dir);
  const model = input.model ?? episode.model ?? clientModelName;
  const limits = episode.model_capabilities;
  return {
    client: "gemini",
    dirs: common.dirs,
    files: [
      jsonFile(join(common.home, ".gemini/settings.json"), {
        security: { auth: { selectedType: "gemini-api-key" } },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        model: {
          disableLoopDetection: true,
          ...(limits ? { compressionThreshold: compactAtTokens(limits) / geminiDefaultTokenLimit } : {}),
        },
        modelConfigs: { customAliases: compressionAliases(model) },
        ide: { enabled: false },
        mcpServers: {
          ura: {
            httpUrl: episode.urls.mcp,
            headers: { Authorization: `Bearer ${mcpTokenReference}` },
            trust: true,
            // Its own default (10 min) is no longer than the sidecar's receipt wait alone.
            timeout: toolCallTimeoutMs(episode),
          },
        },
      }),
    ],
    env: {
      ...common.env,
      GEMINI_CLI_HOME: common.home,
      GOOGLE_GEMINI_BASE_URL: episode.urls.gemini,
      GEMINI_CLI_TRUST_WORKSPACE: "true",
    },
    credentials: { GEMINI_API_KEY: episode.ingress_key, URA_MCP_TOKEN: episode.mcp_token },
    bin: input.bin,
    args: ["-m", model, "-p", { prompt: "whole" }, "-o", "json"],
    cwd: common.cwd,
    model,
  };
}
