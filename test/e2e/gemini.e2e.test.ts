/**
 * End to end with the real, pinned Gemini CLI against the compiled binary
 * (dist/ura-sidecar; run `make build` first), the scripted upstream (plays Qwen)
 * and the embedded inert executor:
 *   1. the smoke episode (observe → two identical records in one batch → finish
 *      with the colour → text) with every `checkSmokeEpisode` check passing; the
 *      CLI's countTokens request got the local 400 and did not count as a turn;
 *   2. a second episode whose CLI names another model: the episode goes to
 *      provider_error and no upstream request is made.
 * The whole test body (upstream, sidecar, CLI) runs in a loopback-only network
 * namespace when `unshare -n` works: this file re-runs itself there, so nothing
 * the CLI does can leave the machine. Launch settings: fixtures/capture/launchers.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { prompt as capturePrompt, launchGemini } from "../../fixtures/capture/launchers.ts";
import { serveScriptedUpstream } from "../../fixtures/scripted-upstream/serve-scripted-upstream.ts";
import { checkSmokeEpisode } from "../../src/validate/smoke-checks.ts";
import {
  binaryPath,
  type LaunchInfo,
  type SidecarProcess,
  startSidecarProcess,
} from "../support/sidecar-process.ts";
import { clientBinPath, installClients } from "./install-clients.ts";

const smokePrompt =
  "Use the ura robot tools: observe the scene, record the observation nonce twice, then finish with the colour you saw.";
const cliTimeoutMs = 180_000;

function readLines(file: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function runGemini(
  info: LaunchInfo,
  model: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const root = mkdtempSync(join(tmpdir(), "ura-gemini-e2e-"));
  const launch = launchGemini({
    bin: clientBinPath("gemini"),
    root,
    baseUrl: info.urls.gemini,
    mcpUrl: info.urls.mcp,
    mcpToken: info.mcp_token,
    apiKey: info.ingress_key,
    model,
    variant: undefined,
  });
  const cmd = launch.cmd.map((arg) => (arg === capturePrompt ? smokePrompt : arg));
  const proc = Bun.spawn(cmd, {
    cwd: launch.cwd,
    env: launch.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill(), cliTimeoutMs);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

const inNamespace = process.env.URA_E2E_NETNS === "1";
const canUnshare = !inNamespace && Bun.spawnSync(["unshare", "-n", "true"]).exitCode === 0;

if (canUnshare) {
  test(
    "Gemini CLI end to end (re-run inside a loopback-only network namespace)",
    async () => {
      const proc = Bun.spawn(
        [
          "unshare",
          "-n",
          "sh",
          "-c",
          'ip link set lo up && exec "$0" "$@"',
          process.execPath,
          "test",
          import.meta.path,
        ],
        { env: { ...process.env, URA_E2E_NETNS: "1" }, stdio: ["ignore", "inherit", "inherit"] },
      );
      expect(await proc.exited).toBe(0);
    },
    2 * cliTimeoutMs + 60_000,
  );
} else {
  describe("Gemini CLI end to end", () => {
    let upstream: Awaited<ReturnType<typeof serveScriptedUpstream>>;
    let sidecar: SidecarProcess;

    beforeAll(async () => {
      if (!existsSync(binaryPath)) throw new Error(`${binaryPath} is missing: run make build first`);
      await installClients(["gemini"]);
      upstream = await serveScriptedUpstream();
      sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
    }, 300_000);

    afterAll(async () => {
      const code = await sidecar?.stop();
      upstream?.stop();
      expect(code).toBe(0);
    });

    test(
      "smoke episode: every acceptance check passes; countTokens got the local 400 and was not a turn",
      async () => {
        const info = await sidecar.createEpisode({ client: "gemini" });
        const model = (info as LaunchInfo & { model: string }).model;
        const before = upstream.scripted.received.length;
        const run = await runGemini(info, model);
        const status = await sidecar.episode(info.id);
        const upstreamRequests = upstream.scripted.received.slice(before);
        const context = `gemini exit ${run.code}\nstdout:\n${run.stdout.slice(-3000)}\nstderr:\n${run.stderr.slice(-3000)}\nsidecar:\n${sidecar.output().slice(-4000)}`;

        const checks = checkSmokeEpisode({ recordsDir: status.records_dir, status, upstreamRequests });
        for (const c of checks) console.log(`${c.pass ? "PASS" : "FAIL"} ${c.name}: ${c.evidence}`);
        const failed = checks.filter((c) => !c.pass);
        if (failed.length > 0) console.error(JSON.stringify(failed, null, 2), context);
        expect(failed).toEqual([]);
        expect(run.code).toBe(0);
        expect(status.mcp).toMatchObject({ initialized: true, tools_listed: true });

        // countTokens: answered locally with a 400, recorded as auxiliary, never an exchange or a turn.
        const auxiliary = readLines(join(status.records_dir, "auxiliary.jsonl"));
        const countTokens = auxiliary.filter((a) => a.operation === "countTokens");
        expect(countTokens.length).toBeGreaterThan(0);
        for (const a of countTokens) {
          expect(a.status).toBe(400);
          expect(String(a.path)).toEndWith(`/v1beta/models/${model}:countTokens`);
        }
        expect(status.counters.auxiliary_responses).toBe(auxiliary.length);
        const exchanges = readLines(join(status.records_dir, "exchanges.jsonl"));
        const requests = exchanges.filter((e) => e.stage === "client_request");
        expect(requests.every((e) => !String(e.path).includes("countTokens"))).toBe(true);
        // observe, records, finish, final text: four delivered turns, no failures, each one upstream request.
        expect(status.counters.delivered_exchanges).toBe(4);
        expect(status.counters.failed_exchanges).toBe(0);
        expect(upstreamRequests).toHaveLength(4);
        expect(sidecar.output()).toContain(":countTokens");
      },
      cliTimeoutMs + 30_000,
    );

    test(
      "a request naming another model puts the episode in provider_error with no upstream request",
      async () => {
        const info = await sidecar.createEpisode({ client: "gemini" });
        const before = upstream.scripted.received.length;
        // Not a gemini-3-* name: those make the CLI drop images (CLIENTS.md).
        const run = await runGemini(info, "gemini-2.5-flash");
        const status = await sidecar.episode(info.id);
        console.log(
          `other model: gemini exit ${run.code}; episode ${status.state} ${JSON.stringify(status.failure)}`,
        );
        expect(upstream.scripted.received.length).toBe(before);
        expect(status.state).toBe("failed");
        expect(status.failure).toMatchObject({ reason: "provider_error" });
        expect(String((status.failure as { message: string }).message)).toContain(
          `"gemini-2.5-flash" is not this episode's model`,
        );
        expect(status.counters.delivered_exchanges).toBe(0);
        const exchanges = readLines(join(status.records_dir, "exchanges.jsonl"));
        const firstStatus = exchanges.find((e) => e.stage === "status");
        expect(firstStatus).toMatchObject({ status: "failed", error: { http_status: 400 } });
        expect(exchanges.some((e) => e.stage === "upstream_request")).toBe(false);
        // 400 is final for the CLI: it gives up instead of retrying for minutes.
        expect(run.code).not.toBe(0);
      },
      cliTimeoutMs + 30_000,
    );
  });
}
