/**
 * Every kit makes its client wait for an MCP tool call at least as long as the
 * sidecar may hold one, through that client's own knob (docs/clients.md): with
 * a client's shorter default, a robot action still running would be reported to
 * the model as timed out and could be called again.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { clientManifests } from "../clients/client-manifests.ts";
import { defaultLongestToolCallMs } from "../config/tool-call-wait.ts";
import type { KitPlan } from "./kit-plan.ts";
import type { LaunchInfo } from "./launch-info.ts";
import { planKit } from "./plan-kit.ts";

const dir = "/var/tmp/ura-kit-plan";
const baseEpisode: LaunchInfo = {
  id: "ep_plan1",
  urls: {
    responses: "http://127.0.0.1:9/e/ep_plan1/v1",
    gemini: "http://127.0.0.1:9/e/ep_plan1/gemini",
    anthropic: "http://127.0.0.1:9/e/ep_plan1/anthropic",
    mcp: "http://127.0.0.1:9/e/ep_plan1/mcp",
  },
  ingress_key: "ura_key_PLAN",
  mcp_token: "ura_mcp_PLAN",
  model: "qwen3-vl-plus",
};

function plan(client: keyof typeof clientManifests, episode: LaunchInfo): KitPlan {
  return planKit(client, { dir, episode, manifest: clientManifests[client], bin: client });
}

function file(kit: KitPlan, path: string): string {
  const found = kit.files.find((f) => f.path === join(dir, path));
  if (!found)
    throw new Error(`no ${path} in the ${kit.client} kit: ${kit.files.map((f) => f.path).join(", ")}`);
  return found.content;
}

// A receipt timeout far above every client's default, and one that is not a whole number of seconds.
const long = { ...baseEpisode, tool_call_timeout_ms: 1_800_500 };

describe("each kit sets its client's MCP tool-call timeout from the launch info", () => {
  test("Codex: [mcp_servers.ura] tool_timeout_sec, rounded up to whole seconds", () => {
    const toml = Bun.TOML.parse(file(plan("codex", long), "codex-home/config.toml")) as {
      mcp_servers: { ura: Record<string, unknown> };
    };
    expect(toml.mcp_servers.ura.tool_timeout_sec).toBe(1801);
  });

  test("Gemini CLI: mcpServers.ura.timeout in ms", () => {
    const settings = JSON.parse(file(plan("gemini", long), "home/.gemini/settings.json"));
    expect(settings.mcpServers.ura.timeout).toBe(1_800_500);
  });

  test("Claude Code: the server's timeout in mcp.json, and the idle timeout (the sidecar sends no progress)", () => {
    const kit = plan("claude", long);
    expect(JSON.parse(file(kit, "mcp.json")).mcpServers.ura.timeout).toBe(1_800_500);
    expect(kit.env.CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT).toBe("1800500");
  });

  test("OpenCode: mcp.ura.timeout in ms", () => {
    const config = JSON.parse(file(plan("opencode", long), "opencode.json"));
    expect(config.mcp.ura.timeout).toBe(1_800_500);
  });

  test("launch info that does not say: the value of the documented defaults, over ten minutes", () => {
    expect(defaultLongestToolCallMs).toBeGreaterThan(600_000);
    const codex = Bun.TOML.parse(file(plan("codex", baseEpisode), "codex-home/config.toml")) as {
      mcp_servers: { ura: Record<string, unknown> };
    };
    expect(codex.mcp_servers.ura.tool_timeout_sec).toBe(Math.ceil(defaultLongestToolCallMs / 1000));
    expect(
      JSON.parse(file(plan("gemini", baseEpisode), "home/.gemini/settings.json")).mcpServers.ura.timeout,
    ).toBe(defaultLongestToolCallMs);
    const claude = plan("claude", baseEpisode);
    expect(JSON.parse(file(claude, "mcp.json")).mcpServers.ura.timeout).toBe(defaultLongestToolCallMs);
    expect(claude.env.CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT).toBe(String(defaultLongestToolCallMs));
    expect(JSON.parse(file(plan("opencode", baseEpisode), "opencode.json")).mcp.ura.timeout).toBe(
      defaultLongestToolCallMs,
    );
  });
});
