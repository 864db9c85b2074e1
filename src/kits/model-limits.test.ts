/**
 * Every kit tells its client the episode model's real limits (launch info
 * `model_capabilities`) through that client's own settings, so it compacts before the
 * upstream's window rather than the one it assumes for an unknown model name.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { declaredModel } from "../../test/support/declared-model.ts";
import { clientManifests } from "../clients/client-manifests.ts";
import type { ModelCapabilities } from "../models/model-capabilities.ts";
import type { KitPlan } from "./kit-plan.ts";
import type { LaunchInfo } from "./launch-info.ts";
import { planKit } from "./plan-kit.ts";

const dir = "/var/tmp/ura-kit-limits";
const small: ModelCapabilities = declaredModel({ image_input: false });
const episode: LaunchInfo = {
  id: "ep_limits",
  urls: {
    responses: "http://127.0.0.1:9/e/ep_limits/v1",
    gemini: "http://127.0.0.1:9/e/ep_limits/gemini",
    anthropic: "http://127.0.0.1:9/e/ep_limits/anthropic",
    mcp: "http://127.0.0.1:9/e/ep_limits/mcp",
  },
  ingress_key: "ura_key_LIMITS",
  mcp_token: "ura_mcp_LIMITS",
  model: "qwen-custom-32k",
  model_capabilities: small,
};
const { model_capabilities: _, ...older } = episode;

const plan = (client: keyof typeof clientManifests, info: LaunchInfo): KitPlan =>
  planKit(client, { dir, episode: info, manifest: clientManifests[client], bin: client });
const file = (kit: KitPlan, path: string): string => {
  const found = kit.files.find((f) => f.path === join(dir, path));
  if (!found) throw new Error(`no ${path} in the ${kit.client} kit`);
  return found.content;
};

describe("the model's limits, in each client's own settings", () => {
  test("Claude Code: context and output variables, and gateway model discovery", () => {
    const kit = plan("claude", episode);
    expect(kit.env).toMatchObject({
      // 24,576 (80% of 30,720) + its 8,192-token output reserve + its 13,000-token summary buffer.
      CLAUDE_CODE_MAX_CONTEXT_TOKENS: "45768",
      CLAUDE_CODE_MAX_OUTPUT_TOKENS: "8192",
      CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY: "1",
    });
    expect(plan("claude", older).env).not.toHaveProperty("CLAUDE_CODE_MAX_CONTEXT_TOKENS");
  });

  test("Codex: model_context_window and model_auto_compact_token_limit at 80% of the largest prompt", () => {
    const toml = Bun.TOML.parse(file(plan("codex", episode), "codex-home/config.toml")) as Record<
      string,
      unknown
    >;
    expect(toml.model_context_window).toBe(30720);
    expect(toml.model_auto_compact_token_limit).toBe(24576);
    const before = Bun.TOML.parse(file(plan("codex", older), "codex-home/config.toml")) as Record<
      string,
      unknown
    >;
    expect(before).not.toHaveProperty("model_context_window");
  });

  test("OpenCode: limit.context and limit.output per model, text-only modalities for a model without images", () => {
    const config = JSON.parse(file(plan("opencode", episode), "opencode.json"));
    const declared = config.provider.ura.models["ura-qwen"];
    expect(declared.limit).toEqual({ context: 32768, output: 8192 });
    expect(declared.modalities.input).toEqual(["text"]);
    expect(declared.attachment).toBe(false);
  });

  test("Gemini CLI: compressionThreshold × its 1,048,576 default limit = the compaction point", () => {
    const settings = JSON.parse(file(plan("gemini", episode), "home/.gemini/settings.json"));
    expect(settings.model.disableLoopDetection).toBe(true);
    expect(Math.round(settings.model.compressionThreshold * 1_048_576)).toBe(24576);
    expect(JSON.parse(file(plan("gemini", older), "home/.gemini/settings.json")).model).not.toHaveProperty(
      "compressionThreshold",
    );
  });
});
