/**
 * End to end with the real, pinned Claude Code: compiled sidecar (dist/ura-sidecar,
 * `make build`), scripted upstream playing Qwen, embedded inert executor. The smoke
 * episode must pass every acceptance check, and the calls the sidecar admitted must
 * be claimed by the tool_use ids it delivered (`_meta["claudecode/toolUseId"]`).
 *
 * Isolation: when `unshare -n` works, this file re-runs itself inside a
 * loopback-only network namespace (sidecar, upstream and CLI all in there), so
 * Claude Code cannot reach any vendor host; otherwise it runs on loopback with
 * the isolation settings of fixtures/capture/launchers.ts (nonessential traffic,
 * telemetry and auto-update off; temp HOME and CLAUDE_CONFIG_DIR).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { launchClaude } from "../../fixtures/capture/launchers.ts";
import { serveScriptedUpstream } from "../../fixtures/scripted-upstream/serve-scripted-upstream.ts";
import { readSse } from "../../src/sse/read-sse.ts";
import { checkSmokeEpisode } from "../../src/validate/smoke-checks.ts";
import {
  binaryPath,
  type LaunchInfo,
  type SidecarProcess,
  startSidecarProcess,
} from "../support/sidecar-process.ts";
import { clientBinPath, installedVersion, readClientManifest } from "./install-clients.ts";

const repoRoot = resolve(import.meta.dir, "../..");
const insideNamespace = process.env.URA_E2E_NETNS === "1";
const canUnshare = !insideNamespace && Bun.spawnSync(["unshare", "-n", "true"]).exitCode === 0;
const timeoutMs = 240_000;
const testTimeoutMs = 2 * timeoutMs;

type Line = Record<string, unknown>;
function readLines(file: string): Line[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Line);
}

/** The tool_use ids the sidecar delivered to Claude Code, in delivery order, from its own records. */
async function deliveredToolUseIds(recordsDir: string): Promise<string[]> {
  const ids: string[] = [];
  for (const line of readLines(join(recordsDir, "exchanges.jsonl"))) {
    if (line.stage !== "delivered" || typeof line.body !== "string") continue;
    const body = new Response(line.body).body as ReadableStream<Uint8Array>;
    for await (const event of readSse(body)) {
      const data = JSON.parse(event.data) as { type: string; content_block?: { type: string; id: string } };
      if (event.event === "content_block_start" && data.content_block?.type === "tool_use")
        ids.push(data.content_block.id);
    }
  }
  return ids;
}

function assertPrerequisites(): void {
  if (!existsSync(binaryPath)) throw new Error(`${binaryPath} is missing: run \`make build\` first`);
  const manifest = readClientManifest("claude");
  if (installedVersion("claude") !== manifest.version) {
    throw new Error(
      `Claude Code ${manifest.version} is not installed: run \`bun test/e2e/install-clients.ts claude\``,
    );
  }
}

/** Runs the pinned Claude Code against an episode with the capture launcher's isolation settings. */
async function runClaude(sidecar: SidecarProcess, episode: LaunchInfo) {
  // Outside any git checkout: Claude Code describes the repository around its cwd.
  mkdirSync("/var/tmp/ura-e2e", { recursive: true });
  const root = mkdtempSync("/var/tmp/ura-e2e/claude-");
  const launch = launchClaude({
    bin: clientBinPath("claude"),
    root,
    baseUrl: episode.urls.anthropic,
    mcpUrl: episode.urls.mcp,
    mcpToken: episode.mcp_token,
    apiKey: episode.ingress_key,
    model: "ura-qwen",
    variant: undefined,
  });
  expect(launch.env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe("1");
  const started = Date.now();
  const proc = Bun.spawn(launch.cmd, {
    cwd: launch.cwd,
    env: launch.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill(), timeoutMs - 30_000);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  const context = `claude exit ${code}\nstdout:\n${stdout.slice(-4000)}\nstderr:\n${stderr.slice(-4000)}\nsidecar:\n${sidecar.output().slice(-4000)}`;
  return { stdout, code, context, ms: Date.now() - started };
}

function resultMessage(stdout: string): { type?: string; result?: string; is_error?: boolean } | undefined {
  return stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { type?: string; result?: string; is_error?: boolean })
    .find((m) => m.type === "result");
}

async function runSmokeEpisode(): Promise<void> {
  assertPrerequisites();
  const upstream = await serveScriptedUpstream();
  const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
  try {
    const episode = await sidecar.createEpisode({ client: "claude" });
    const { stdout, code, context } = await runClaude(sidecar, episode);

    const status = await sidecar.episode(episode.id);
    const checks = checkSmokeEpisode({
      recordsDir: episode.records_dir,
      status,
      upstreamRequests: upstream.scripted.received,
    });
    const failed = checks.filter((c) => !c.pass);
    if (failed.length > 0) console.error(`${JSON.stringify(failed, null, 2)}\n${context}`);
    expect(failed).toEqual([]);
    expect(code).toBe(0);

    // Claude Code spoke MCP to the episode's `ura` server.
    expect(status.mcp).toMatchObject({ initialized: true, tools_listed: true });

    // Every claim used the tool_use id Claude Code echoed in _meta, and the claimed ids
    // are exactly the tool_use ids the sidecar delivered (observe, record, record, finish).
    const ledger = readLines(join(episode.records_dir, "ledger.jsonl"));
    const claimed = ledger.filter((e) => e.type === "claimed");
    expect(claimed.map((e) => e.by)).toEqual(["call_id", "call_id", "call_id", "call_id"]);
    const delivered = await deliveredToolUseIds(episode.records_dir);
    expect(delivered).toHaveLength(4);
    expect(claimed.map((e) => e.callId)).toEqual(delivered);
    const registered = ledger
      .filter((e) => e.type === "registered")
      .flatMap((e) => (e.calls as { id: string }[]).map((c) => c.id));
    expect(registered).toEqual(delivered);
    expect(ledger.filter((e) => e.type === "refused")).toEqual([]);

    // Every exchange was a Messages exchange that was delivered; nothing provider-only went upstream.
    const statuses = readLines(join(episode.records_dir, "exchanges.jsonl")).filter(
      (l) => l.stage === "status",
    );
    expect(statuses.map((s) => s.status)).toEqual(statuses.map(() => "delivered"));
    expect(statuses.length).toBe(4); // → observe, → record ×2, → finish, → text
    for (const request of upstream.scripted.received) {
      const wire = JSON.stringify(request.body);
      expect(wire).not.toContain("cache_control");
      expect(wire).not.toContain('thinking":{');
    }

    // The final answer reached the user.
    const result = resultMessage(stdout);
    expect(result?.is_error).toBe(false);
    expect(result?.result).toContain("The episode is complete");
  } finally {
    const exit = await sidecar.stop();
    upstream.stop();
    expect(exit).toBe(0);
  }
}

/**
 * Transient upstream trouble: the sidecar's own retries are spent, Claude Code gets
 * 529 overloaded_error and retries; the episode is already in provider_error, so
 * the retry gets a final 400 and Claude Code stops — no further upstream work.
 */
async function runUpstreamFailure(): Promise<void> {
  assertPrerequisites();
  const upstream = await serveScriptedUpstream();
  const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
  try {
    const episode = await sidecar.createEpisode({ client: "claude" });
    upstream.scripted.enqueueFaults(
      Array.from({ length: 10 }, () => ({ kind: "status" as const, status: 503 })),
    );
    const { stdout, code, context, ms } = await runClaude(sidecar, episode);
    const statuses = readLines(join(episode.records_dir, "exchanges.jsonl")).filter(
      (l) => l.stage === "status",
    );
    const errors = statuses.map((s) => (s.error as { kind: string; http_status: number }).kind);
    if (errors[0] !== "upstream_transient") console.error(context);
    expect(errors).toEqual(["upstream_transient", "episode_closed"]);
    const status = await sidecar.episode(episode.id);
    expect(status.state).toBe("failed");
    expect(status.failure).toMatchObject({ reason: "provider_error" });
    // The sidecar's own attempts (retry config: 3), and nothing after the episode failed.
    expect(upstream.scripted.received).toHaveLength(3);
    expect(code).not.toBe(0);
    expect(resultMessage(stdout)?.is_error).toBe(true);
    expect(
      readLines(join(episode.records_dir, "ledger.jsonl")).filter((e) => e.type === "registered"),
    ).toEqual([]);
    console.error(`claude stopped ${ms} ms after start, after 1 retry of the 529`);
  } finally {
    await sidecar.stop();
    upstream.stop();
  }
}

if (canUnshare) {
  test(
    "Claude Code smoke episode and upstream failure, inside a loopback-only network namespace",
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
          "./test/e2e/claude.e2e.test.ts",
        ],
        {
          cwd: repoRoot,
          env: { ...process.env, URA_E2E_NETNS: "1" },
          stdio: ["ignore", "inherit", "inherit"],
        },
      );
      expect(await proc.exited).toBe(0);
    },
    testTimeoutMs + 15_000,
  );
} else {
  describe(
    insideNamespace ? "inside the network namespace" : "on loopback (no network namespace available)",
    () => {
      test(
        "Claude Code smoke episode: every acceptance check, claims by the delivered tool_use ids",
        runSmokeEpisode,
        timeoutMs,
      );
      test(
        "upstream failure: 529, one client retry, a final 400, no more upstream work",
        runUpstreamFailure,
        timeoutMs,
      );
    },
  );
}
