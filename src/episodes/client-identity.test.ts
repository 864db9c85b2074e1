import { describe, expect, test } from "bun:test";
import { clientManifests } from "../clients/client-manifests.ts";
import { SidecarError } from "../lib/errors.ts";
import {
  type ClientIdentityInit,
  createClientIdentity,
  type McpSeen,
  maxSessionIds,
} from "./client-identity.ts";

const claudePin = clientManifests.claude.version;
const claudeUa = `claude-cli/${claudePin} (external, sdk-cli)`;
const connected: McpSeen = {
  initialized: true,
  tools_listed: true,
  user_agent: `claude-code/${claudePin} (sdk-cli)`,
};
const notConnected: McpSeen = { initialized: false, tools_listed: false, user_agent: undefined };
const headers = (ua: string) => new Headers({ "user-agent": ua });

/** An identity of episode ep_1 expecting claude, not pinned, warning without MCP; `fields` change that. */
const identityOf = (fields: Partial<ClientIdentityInit> = {}) =>
  createClientIdentity({
    episodeId: "ep_1",
    expected: "claude",
    requirePinned: false,
    mcpRequired: "warn",
    ...fields,
  });

function refusal(fn: () => void): SidecarError | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof SidecarError) return error;
    throw error;
  }
  return undefined;
}

describe("proven versions", () => {
  // A Claude Code manifest with an older proven version beside the pin.
  const pin = clientManifests.claude.version;
  const manifests = {
    ...clientManifests,
    claude: { ...clientManifests.claude, proven_versions: ["2.1.100", pin] },
  };
  const ua = (version: string) => `claude-cli/${version} (external, sdk-cli)`;
  const mcp = (version: string): McpSeen => ({
    ...connected,
    user_agent: `claude-code/${version} (sdk-cli)`,
  });
  const identity = (requirePinned: boolean) => identityOf({ requirePinned, manifests });

  test("require_pinned_client accepts a proven version that is not the pin; the status lists the proven versions", () => {
    const id = identity(true);
    expect(refusal(() => id.checkModelRequest(headers(ua("2.1.100")), mcp("2.1.100")))).toBeUndefined();
    expect(id.describe(mcp("2.1.100"))).toMatchObject({
      pinned_version: pin,
      proven_versions: ["2.1.100", pin],
      model_client: { client: "claude", version: "2.1.100" },
      pinned: true,
      unpinned_reason: null,
      flags: [],
    });
  });

  test("a version that is not proven is reported and, when the pin is required, refused naming the proven versions", () => {
    const lenient = identity(false);
    lenient.checkModelRequest(headers(ua("2.1.150")), mcp("2.1.150"));
    const status = lenient.describe(mcp("2.1.150"));
    expect(status).toMatchObject({ pinned: false, flags: ["unpinned_client"] });
    expect(status.unpinned_reason).toContain(`claude 2.1.150, not a proven version`);
    expect(status.unpinned_reason).toContain(`proven: 2.1.100, ${pin}`);

    const strict = identity(true);
    const error = refusal(() => strict.checkModelRequest(headers(ua("2.1.150")), mcp("2.1.150")));
    expect(error?.kind).toBe("invalid_request");
    expect(error?.message).toContain("require_pinned_client");
    expect(error?.message).toContain(`proven: 2.1.100, ${pin}`);
  });

  test("the MCP side is judged the same way: a proven model side with an unproven MCP side is not proven", () => {
    const id = identity(false);
    id.checkModelRequest(headers(ua("2.1.100")), mcp("2.1.150"));
    expect(id.describe(mcp("2.1.150")).unpinned_reason).toContain("MCP requests come from claude 2.1.150");
  });
});

describe("the client's own session id", () => {
  const id = () => identityOf();
  const withSession = (session: string) =>
    new Headers({ "user-agent": claudeUa, "x-claude-code-session-id": session });

  test("at most maxSessionIds distinct ids are kept; the rest are counted", () => {
    const identity = id();
    for (let i = 0; i < maxSessionIds + 3; i++) identity.checkModelRequest(withSession(`s-${i}`), connected);
    identity.checkModelRequest(withSession("s-0"), connected);
    const status = identity.describe(connected);
    expect(status.session_ids).toHaveLength(maxSessionIds);
    expect(status.session_ids[0]).toBe("s-0");
    expect(status.session_ids_beyond_limit).toBe(3);
  });

  test("a long value is cut; a request refused for its version still names its session", () => {
    const strict = identityOf({ requirePinned: true });
    const headers = new Headers({
      "user-agent": "claude-cli/2.0.1 (external, sdk-cli)",
      "x-claude-code-session-id": "x".repeat(500),
    });
    expect(refusal(() => strict.checkModelRequest(headers, connected))?.kind).toBe("invalid_request");
    expect(strict.describe(connected).session_ids).toEqual(["x".repeat(200)]);
  });

  test("before any model request: no ids, no header", () => {
    expect(id().describe(notConnected)).toMatchObject({ session_ids: [], session_header: null });
  });
});

describe("client identity", () => {
  test("reports the detected pinned client and version without refusing by default", () => {
    const id = identityOf({ expected: undefined });
    expect(id.describe(notConnected).pinned).toBeNull();
    id.checkModelRequest(headers(claudeUa), connected);
    expect(id.describe(connected)).toMatchObject({
      expected: "claude",
      pinned_version: claudePin,
      model_client: { client: "claude", version: claudePin },
      mcp_client: { client: "claude", version: claudePin },
      pinned: true,
      flags: [],
    });
  });

  test("another version is reported, and refused with a 400 naming both versions when the episode requires the pin", () => {
    const old = "claude-cli/2.0.1 (external, sdk-cli)";
    const lenient = identityOf();
    lenient.checkModelRequest(headers(old), connected);
    expect(lenient.describe(connected)).toMatchObject({ pinned: false, flags: ["unpinned_client"] });

    const strict = identityOf({ requirePinned: true });
    const error = refusal(() => strict.checkModelRequest(headers(old), connected));
    expect(error?.status).toBe(400);
    expect(error?.message).toContain("claude 2.0.1");
    expect(error?.message).toContain(`@anthropic-ai/claude-code@${claudePin}`);
    expect(refusal(() => strict.checkModelRequest(headers(claudeUa), connected))).toBeUndefined();
  });

  test("the pin also covers the MCP side and the expected client; an unknown User-Agent is not pinned", () => {
    const strict = identityOf({ requirePinned: true });
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
    const strict = identityOf({ expected: "gemini", requirePinned: true });
    const mcp = { initialized: true, tools_listed: true, user_agent: "node" };
    strict.checkModelRequest(headers("GeminiCLI-tui/0.61.0/ura-qwen (linux; x64; terminal)"), mcp);
    expect(strict.describe(mcp)).toMatchObject({
      pinned: true,
      mcp_client: { client: "gemini", version: null },
    });
  });

  test("MCP never connected: warn logs and flags; refuse answers 400 from the second model request on", () => {
    const warnings: string[] = [];
    const warn = identityOf({ warn: (m) => warnings.push(m) });
    warn.checkModelRequest(headers(claudeUa), notConnected);
    warn.checkModelRequest(headers(claudeUa), notConnected);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain("never connected");
    expect(warn.describe(notConnected)).toMatchObject({
      mcp_connected: false,
      model_requests_without_mcp: 2,
      flags: ["mcp_not_connected"],
    });

    const refuse = identityOf({ mcpRequired: "refuse" });
    expect(refusal(() => refuse.checkModelRequest(headers(claudeUa), notConnected))).toBeUndefined();
    const error = refusal(() => refuse.checkModelRequest(headers(claudeUa), notConnected));
    expect(error?.status).toBe(400);
    expect(error?.message).toContain("MCP side of episode ep_1 never connected");
    // Once connected, nothing is refused.
    expect(refusal(() => refuse.checkModelRequest(headers(claudeUa), connected))).toBeUndefined();
  });
});
