/**
 * `ura-sidecar validate` run by the end-to-end tests (tests only): the compiled
 * binary validates a pinned CLI (its kit, its launch script, the smoke prompt,
 * every acceptance check) and leaves its evidence in an output directory. Each
 * per-client test runs it once for its client and asserts, on top of the
 * validate verdict, what is particular to that client from the same evidence:
 * one smoke run per client in the whole suite.
 */

import { expect } from "bun:test";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { ClientName } from "../../src/clients/client-manifests.ts";
import { episodeStatusSchema } from "../../src/episodes/episode-status.ts";
import { runLaunch } from "../../src/kits/run-launch.ts";
import { insideNamespaceEnv } from "../../src/validate/network-namespace.ts";
import { binaryPath, type EpisodeStatus } from "./sidecar-process.ts";
import { varTmp } from "./var-tmp.ts";
import { clientsDirArguments, versionUnderTest } from "./version-under-test.ts";

const repoRoot = resolve(import.meta.dir, "../..");
/** Longer than any test that runs validate waits: a hung run is killed rather than left behind. */
const validateTimeoutMs = 1_200_000;

export type ValidationCheck = { name: string; pass: boolean; evidence: string; evidence_paths: string[] };
export type ClientValidation = {
  client: string;
  version: string;
  pinned: boolean;
  passed: boolean;
  kit: string;
  checks: ValidationCheck[];
};
export type ValidateRun = {
  code: number;
  stdout: string;
  stderr: string;
  out: string;
  summary: { passed: boolean; clients: ClientValidation[] } | undefined;
};

/**
 * Runs `ura-sidecar validate <args> --out <fresh dir>` with a bare environment (plus
 * `env`), on the clients the tests run (version-under-test.ts).
 */
export async function runValidate(args: string[], env: Record<string, string> = {}): Promise<ValidateRun> {
  const out = mkdtempSync(join(varTmp(), "validate-"));
  const inside = process.env[insideNamespaceEnv];
  const { stdout, stderr, code } = await runLaunch(
    {
      cmd: [binaryPath, "validate", ...args, ...clientsDirArguments(), "--out", out],
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? "/tmp",
        // Already in the tests' loopback-only namespace: validate need not make another.
        ...(inside === "1" ? { [insideNamespaceEnv]: inside } : {}),
        ...env,
      },
    },
    validateTimeoutMs,
  );
  const summaryFile = join(out, "validation.json");
  const summary = existsSync(summaryFile)
    ? (JSON.parse(readFileSync(summaryFile, "utf8")) as ValidateRun["summary"])
    : undefined;
  return { code, stdout, stderr, out, summary };
}

/** validate passed the client: exit 0, and every check of its validation.json passed with its evidence on disk. */
export function expectClientValidated(run: ValidateRun, client: ClientName): ClientValidation {
  if (run.code !== 0) console.error(`${run.stdout}\n${run.stderr}`);
  expect(run.code).toBe(0);
  const perClient = JSON.parse(
    readFileSync(join(run.out, client, "validation.json"), "utf8"),
  ) as ClientValidation;
  expect(run.summary?.passed).toBe(true);
  expect(run.summary?.clients.map((c) => c.client)).toEqual([client]);
  const version = versionUnderTest(client);
  expect(perClient).toMatchObject({ client, passed: true, version });
  expect(perClient.checks.filter((c) => !c.pass)).toEqual([]);
  expect(perClient.checks.map((c) => c.name)).toContain("MCP side connected (initialize and tools/list)");
  expect(perClient.checks.length).toBeGreaterThanOrEqual(9);
  for (const c of perClient.checks) for (const p of c.evidence_paths) expect(existsSync(p)).toBe(true);
  expect(run.stdout).toContain(`PASS ${client}`);
  return perClient;
}

/** What validate left of one client's smoke episode. */
export type SmokeEvidence = {
  validation: ClientValidation;
  status: EpisodeStatus;
  recordsDir: string;
  /** What the scripted upstream received during this client's run. */
  upstreamRequests: { body: unknown }[];
  stdout: string;
  sidecarLog: string;
  kitDir: string;
};

/**
 * Validates `client` (its MCP side connected, as the episode status says too) and
 * returns the evidence of its smoke episode for the client's own assertions.
 */
export async function validateSmokeEpisode(client: ClientName): Promise<SmokeEvidence> {
  const run = await runValidate(["--client", client]);
  const validation = expectClientValidated(run, client);
  const dir = join(run.out, client);
  const read = (name: string) => readFileSync(join(dir, name), "utf8");
  const status = episodeStatusSchema.parse(JSON.parse(read("episode-status.json")));
  expect(status.mcp).toMatchObject({ initialized: true, tools_listed: true });
  return {
    validation,
    status,
    recordsDir: status.records_dir,
    upstreamRequests: JSON.parse(read("upstream-requests.json")) as { body: unknown }[],
    stdout: read("client-stdout.txt"),
    sidecarLog: readFileSync(join(run.out, "sidecar.log"), "utf8"),
    kitDir: validation.kit,
  };
}
