/**
 * `ura-sidecar validate` end to end: the compiled binary (dist/ura-sidecar, `make
 * build`) validates each pinned CLI (installed into .clients/ from npm): exit 0
 * and a validation.json whose every check passed. Then a deliberately broken kit
 * (a wrong MCP token) must make validate fail, saying the MCP side never
 * connected — not a silent pass. validate itself moves into a loopback-only
 * network namespace when `unshare -n` works.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { binaryPath } from "../support/sidecar-process.ts";
import { clientNames, installClients } from "./install-clients.ts";

const repoRoot = resolve(import.meta.dir, "../..");
const timeoutMs = 300_000;

type Check = { name: string; pass: boolean; evidence: string; evidence_paths: string[] };
type ClientValidation = {
  client: string;
  version: string;
  pinned: boolean;
  passed: boolean;
  checks: Check[];
};

async function validate(args: string[]) {
  mkdirSync("/var/tmp/ura-e2e", { recursive: true });
  const out = mkdtempSync("/var/tmp/ura-e2e/validate-");
  const proc = Bun.spawn([binaryPath, "validate", ...args, "--out", out], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  const summaryFile = join(out, "validation.json");
  const summary = existsSync(summaryFile)
    ? (JSON.parse(readFileSync(summaryFile, "utf8")) as { passed: boolean; clients: ClientValidation[] })
    : undefined;
  return { code, stdout, stderr, out, summary };
}

describe("ura-sidecar validate", () => {
  beforeAll(async () => {
    if (!existsSync(binaryPath)) throw new Error(`${binaryPath} is missing: run make build first`);
    await installClients();
  }, timeoutMs);

  for (const client of clientNames) {
    test(
      `validate --client ${client}: exit 0, every check in validation.json passed`,
      async () => {
        const run = await validate(["--client", client]);
        if (run.code !== 0) console.error(`${run.stdout}\n${run.stderr}`);
        expect(run.code).toBe(0);
        const perClient = JSON.parse(
          readFileSync(join(run.out, client, "validation.json"), "utf8"),
        ) as ClientValidation;
        expect(run.summary?.passed).toBe(true);
        expect(run.summary?.clients.map((c) => c.client)).toEqual([client]);
        expect(perClient).toMatchObject({ client, passed: true, pinned: true });
        expect(perClient.checks.filter((c) => !c.pass)).toEqual([]);
        expect(perClient.checks.map((c) => c.name)).toContain(
          "MCP side connected (initialize and tools/list)",
        );
        expect(perClient.checks.length).toBeGreaterThanOrEqual(9);
        for (const c of perClient.checks) for (const p of c.evidence_paths) expect(existsSync(p)).toBe(true);
        expect(run.stdout).toContain(`PASS ${client}`);
      },
      timeoutMs,
    );
  }

  test(
    "a kit with a wrong MCP token makes validate fail, saying the MCP side never connected",
    async () => {
      const run = await validate(["--client", "codex", "--wrong-mcp-token"]);
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
