/**
 * OpenCode kit (docs/clients.md, docs/client-observations.md): the `ura` provider on
 * the episode's Responses URL via @ai-sdk/openai, the `ura` remote MCP server, only
 * `ura_*` tools allowed, the call-id plugin, every OPENCODE_DISABLE_* switch that
 * keeps it offline, and a pre-seeded config dir so it skips its own npm install.
 * Credentials are `{env:…}` references resolved by OpenCode at start-up. The model's
 * `limit` and input modalities come from the episode model's capabilities: OpenCode
 * compacts when an answer's tokens reach `limit.context` minus `limit.output`.
 */
import { join } from "node:path";
import { modelToolName } from "../clients/tool-names.ts";
import { callIdPluginSource } from "./call-id-plugin-source.ts";
import {
  clientModelName,
  commonKitParts,
  jsonFile,
  type KitInput,
  type KitPlan,
  modelWaitMs,
  toolCallTimeoutMs,
} from "./kit-plan.ts";

export function planOpencodeKit(input: KitInput): KitPlan {
  const { dir, episode, manifest } = input;
  const common = commonKitParts(dir);
  const model = input.model ?? clientModelName;
  const xdg = {
    XDG_CONFIG_HOME: join(common.home, ".config"),
    XDG_DATA_HOME: join(common.home, ".local/share"),
    XDG_CACHE_HOME: join(common.home, ".cache"),
    XDG_STATE_HOME: join(common.home, ".local/state"),
  };
  const configDir = join(xdg.XDG_CONFIG_HOME, "opencode");
  const configFile = join(dir, "opencode.json");
  const pluginFile = input.pluginFile ?? join(dir, "plugins/ura-call-id.ts");
  const pluginDependency = { "@opencode-ai/plugin": manifest.version };
  const limits = episode.model_capabilities;
  // Launch info from an older sidecar carries no capabilities: the kit's former figures.
  const imageInput = limits?.image_input ?? true;
  const files = [
    // Pre-seeded so OpenCode skips its background `npm install @opencode-ai/plugin`.
    jsonFile(join(configDir, "package.json"), { dependencies: pluginDependency }),
    jsonFile(join(configDir, "package-lock.json"), {
      name: "opencode",
      lockfileVersion: 3,
      requires: true,
      packages: { "": { dependencies: pluginDependency } },
    }),
    jsonFile(configFile, {
      $schema: "https://opencode.ai/config.json",
      autoupdate: false,
      share: "disabled",
      model: `ura/${model}`,
      small_model: `ura/${model}`,
      provider: {
        ura: {
          npm: "@ai-sdk/openai",
          name: "ura",
          // The waits for the response head and between two stream reads (5 min each by
          // default): past the sidecar's deadline.
          options: {
            baseURL: episode.urls.responses,
            apiKey: "{env:URA_KEY}",
            headerTimeout: modelWaitMs(episode),
            chunkTimeout: modelWaitMs(episode),
          },
          models: {
            [model]: {
              name: model,
              tool_call: true,
              attachment: imageInput,
              reasoning: false,
              modalities: { input: imageInput ? ["text", "image"] : ["text"], output: ["text"] },
              limit: limits
                ? { context: limits.context_window, output: limits.max_output_tokens }
                : { context: 131072, output: 8192 },
            },
          },
        },
      },
      mcp: {
        ura: {
          type: "remote",
          url: episode.urls.mcp,
          headers: { Authorization: "Bearer {env:URA_MCP_TOKEN}" },
          oauth: false,
          // Also the limit of each tool call, else the MCP SDK's 60 s.
          timeout: toolCallTimeoutMs(episode),
        },
      },
      // Only the robot tools: OpenCode's permission patterns match model-visible names.
      permission: { "*": "deny", [modelToolName(manifest.tool_name_scheme, "ura", "*")]: "allow" },
      plugin: [`file://${pluginFile}`],
    }),
  ];
  if (input.pluginFile === undefined) files.push({ path: pluginFile, content: callIdPluginSource });
  return {
    client: "opencode",
    dirs: [...common.dirs, join(configDir, "node_modules")],
    files,
    env: {
      ...common.env,
      ...xdg,
      OPENCODE_CONFIG: configFile,
      OPENCODE_DISABLE_PROJECT_CONFIG: "1",
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
      OPENCODE_DISABLE_CLAUDE_CODE: "1",
      OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
    },
    credentials: { URA_KEY: episode.ingress_key, URA_MCP_TOKEN: episode.mcp_token },
    bin: input.bin,
    args: ["run", "--model", `ura/${model}`, "--format", "json", { prompt: "words" }],
    cwd: common.cwd,
    model,
  };
}
