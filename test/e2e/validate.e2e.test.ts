/**
 * `ura-sidecar validate` failing as it must: a deliberately broken kit (a wrong
 * MCP token) must make validate fail, saying the MCP side never connected — not
 * a silent pass. (validate passing each pinned CLI — exit 0, every check of
 * validation.json passed — is asserted by the per-client end-to-end tests, each
 * of which runs its smoke episode through validate: test/support/validate-run.ts.)
 * validate itself moves into a loopback-only network namespace when `unshare -n`
 * works.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { installClients } from "../../src/clients/install-clients.ts";
import { binaryPath } from "../support/sidecar-process.ts";
import { runValidate } from "../support/validate-run.ts";

const timeoutMs = 300_000;

describe("ura-sidecar validate", () => {
  beforeAll(async () => {
    if (!existsSync(binaryPath)) throw new Error(`${binaryPath} is missing: run make build first`);
    await installClients(["codex"]);
  }, timeoutMs);

  test(
    "a kit with a wrong MCP token makes validate fail, saying the MCP side never connected",
    async () => {
      const run = await runValidate(["--client", "codex", "--wrong-mcp-token"]);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain("the MCP side never connected");
      expect(run.summary?.passed).toBe(false);
      const mcp = run.summary?.clients[0]?.checks.find((c) => c.name.startsWith("MCP side connected"));
      expect(mcp?.pass).toBe(false);
      expect(mcp?.evidence).toContain("the MCP side never connected");
      // The episode status flags it too (mcp_required: warn).
      const status = JSON.parse(readFileSync(join(run.out, "codex", "episode-status.json"), "utf8"));
      expect(status.client_identity.flags).toContain("mcp_not_connected");
      expect(status.mcp).toMatchObject({ initialized: false, tools_listed: false });
    },
    timeoutMs,
  );
});
