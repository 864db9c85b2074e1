import { expect, test } from "bun:test";
import { detectClient } from "./detect-client.ts";

// User-Agents recorded at the pinned versions (docs/client-observations.md).
test("each pinned client is recognised on both sides, with its version", () => {
  expect(detectClient("opencode/1.18.33 ai-sdk/provider-utils/4.0.40 runtime/bun/1.3.14", "model")).toEqual({
    client: "opencode",
    version: "1.18.33",
  });
  expect(detectClient("opencode/1.18.33", "mcp")).toEqual({ client: "opencode", version: "1.18.33" });
  expect(detectClient("claude-cli/2.1.197 (external, sdk-cli)", "model")).toEqual({
    client: "claude",
    version: "2.1.197",
  });
  expect(detectClient("claude-code/2.1.197 (sdk-cli)", "mcp")).toEqual({
    client: "claude",
    version: "2.1.197",
  });
  expect(
    detectClient("codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)", "model"),
  ).toEqual({ client: "codex", version: "0.171.0" });
  expect(detectClient("codex-mcp-client/0.171.0", "mcp")).toEqual({ client: "codex", version: "0.171.0" });
  expect(detectClient("GeminiCLI-tui/0.61.0/ura-qwen (linux; x64; terminal)", "model")).toEqual({
    client: "gemini",
    version: "0.61.0",
  });
  expect(detectClient("node", "mcp")).toEqual({ client: "gemini", version: null });
});

test("unknown or missing User-Agents, and a model UA on the MCP side, are not detected", () => {
  expect(detectClient("curl/8.5.0", "model")).toBeUndefined();
  expect(detectClient(undefined, "model")).toBeUndefined();
  expect(detectClient("", "mcp")).toBeUndefined();
  expect(detectClient("claude-cli/2.1.197 (external, sdk-cli)", "mcp")).toBeUndefined();
});
