import { describe, expect, test } from "bun:test";
import { SidecarError } from "../lib/errors.ts";
import { createClientIdentity, type McpSeen } from "./client-identity.ts";

const claudeUa = "claude-cli/2.1.197 (external, sdk-cli)";
const connected: McpSeen = {
  initialized: true,
  tools_listed: true,
  user_agent: "claude-code/2.1.197 (sdk-cli)",
};
const notConnected: McpSeen = { initialized: false, tools_listed: false, user_agent: undefined };
const headers = (ua: string) => new Headers({ "user-agent": ua });

function refusal(fn: () => void): SidecarError | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof SidecarError) return error;
    throw error;
  }
  return undefined;
}

describe("client identity", () => {
  test("reports the detected pinned client and version without refusing by default", () => {
    const id = createClientIdentity({
      episodeId: "ep_1",
      expected: undefined,
      requirePinned: false,
      mcpRequired: "warn",
    });
    expect(id.describe(notConnected).pinned).toBeNull();
    id.checkModelRequest(headers(claudeUa), connected);
    expect(id.describe(connected)).toMatchObject({
      expected: "claude",
      pinned_version: "2.1.197",
      model_client: { client: "claude", version: "2.1.197" },
      mcp_client: { client: "claude", version: "2.1.197" },
      pinned: true,
      flags: [],
    });
  });

  test("another version is reported, and refused with a 400 naming both versions when the episode requires the pin", () => {
    const old = "claude-cli/2.0.1 (external, sdk-cli)";
    const lenient = createClientIdentity({
      episodeId: "ep_1",
      expected: "claude",
      requirePinned: false,
      mcpRequired: "warn",
    });
    lenient.checkModelRequest(headers(old), connected);
    expect(lenient.describe(connected)).toMatchObject({ pinned: false, flags: ["unpinned_client"] });

    const strict = createClientIdentity({
      episodeId: "ep_1",
      expected: "claude",
      requirePinned: true,
      mcpRequired: "warn",
    });
    const error = refusal(() => strict.checkModelRequest(headers(old), connected));
    expect(error?.status).toBe(400);
    expect(error?.message).toContain("claude 2.0.1");
    expect(error?.message).toContain("@anthropic-ai/claude-code@2.1.197");
    expect(refusal(() => strict.checkModelRequest(headers(claudeUa), connected))).toBeUndefined();
  });

  test("the pin also covers the MCP side and the expected client; an unknown User-Agent is not pinned", () => {
    const strict = createClientIdentity({
      episodeId: "ep_1",
      expected: "claude",
      requirePinned: true,
      mcpRequired: "warn",
    });
    const oldMcp = { ...connected, user_agent: "claude-code/2.0.9 (sdk-cli)" };
    expect(refusal(() => strict.checkModelRequest(headers(claudeUa), oldMcp))?.message).toContain(
      "MCP requests come from claude 2.0.9",
    );
    const codexUa = "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)";
    expect(refusal(() => strict.checkModelRequest(headers(codexUa), connected))?.message).toContain(
      "this episode is for claude",
    );
    expect(refusal(() => strict.checkModelRequest(headers("curl/8.0.0"), connected))?.message).toContain(
      "not one of the pinned clients",
    );
  });

  test("Gemini CLI's MCP User-Agent `node` carries no version and is accepted", () => {
    const strict = createClientIdentity({
      episodeId: "ep_1",
      expected: "gemini",
      requirePinned: true,
      mcpRequired: "warn",
    });
    const mcp = { initialized: true, tools_listed: true, user_agent: "node" };
    strict.checkModelRequest(headers("GeminiCLI-tui/0.61.0/ura-qwen (linux; x64; terminal)"), mcp);
    expect(strict.describe(mcp)).toMatchObject({
      pinned: true,
      mcp_client: { client: "gemini", version: null },
    });
  });

  test("MCP never connected: warn logs and flags; refuse answers 400 from the second model request on", () => {
    const warnings: string[] = [];
    const warn = createClientIdentity({
      episodeId: "ep_1",
      expected: "claude",
      requirePinned: false,
      mcpRequired: "warn",
      warn: (m) => warnings.push(m),
    });
    warn.checkModelRequest(headers(claudeUa), notConnected);
    warn.checkModelRequest(headers(claudeUa), notConnected);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain("never connected");
    expect(warn.describe(notConnected)).toMatchObject({
      mcp_connected: false,
      model_requests_without_mcp: 2,
      flags: ["mcp_not_connected"],
    });

    const refuse = createClientIdentity({
      episodeId: "ep_1",
      expected: "claude",
      requirePinned: false,
      mcpRequired: "refuse",
    });
    expect(refusal(() => refuse.checkModelRequest(headers(claudeUa), notConnected))).toBeUndefined();
    const error = refusal(() => refuse.checkModelRequest(headers(claudeUa), notConnected));
    expect(error?.status).toBe(400);
    expect(error?.message).toContain("MCP side of episode ep_1 never connected");
    // Once connected, nothing is refused.
    expect(refusal(() => refuse.checkModelRequest(headers(claudeUa), connected))).toBeUndefined();
  });
});
