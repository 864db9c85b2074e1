/**
 * End to end with the real, pinned OpenCode (`opencode-ai`, OpenAI Responses via
 * `@ai-sdk/openai`): compiled sidecar (dist/ura-sidecar, `make build`), scripted
 * upstream playing Qwen, embedded inert executor, and the call-id plugin of
 * manifests/opencode/. The smoke episode must pass every acceptance check; every
 * call must be claimed by the `_callID` the plugin adds to the MCP arguments (=
 * the call id the sidecar delivered), and `_callID` must never reach the model.
 *
 * Isolation: when `unshare -n` works, this file re-runs itself inside a
 * loopback-only network namespace (sidecar, upstream and CLI all in there);
 * otherwise it runs on loopback with the isolation settings of
 * fixtures/capture/launchers.ts (temp HOME/XDG dirs, OPENCODE_DISABLE_*, no
 * project config, plugin dir pre-seeded so no npm install runs).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { launchOpencode } from "../../fixtures/capture/launchers.ts";
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

type Line = Record<string, unknown>;
function readLines(file: string): Line[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Line);
}

/** The function-call ids the sidecar delivered, in delivery order, from its own records. */
async function deliveredCallIds(recordsDir: string): Promise<string[]> {
  const ids: string[] = [];
  for (const line of readLines(join(recordsDir, "exchanges.jsonl"))) {
    if (line.stage !== "delivered" || typeof line.body !== "string") continue;
    for await (const event of readSse(new Response(line.body).body as ReadableStream<Uint8Array>)) {
      const data = JSON.parse(event.data) as { item?: { type: string; call_id: string } };
      if (event.event === "response.output_item.done" && data.item?.type === "function_call")
        ids.push(data.item.call_id);
    }
  }
  return ids;
}

function assertPrerequisites(): void {
  if (!existsSync(binaryPath)) throw new Error(`${binaryPath} is missing: run \`make build\` first`);
  const manifest = readClientManifest("opencode");
  if (installedVersion("opencode") !== manifest.version) {
    throw new Error(
      `OpenCode ${manifest.version} is not installed: run \`bun test/e2e/install-clients.ts opencode\``,
    );
  }
}

async function runOpencode(sidecar: SidecarProcess, episode: LaunchInfo) {
  mkdirSync("/var/tmp/ura-e2e", { recursive: true });
  const root = mkdtempSync("/var/tmp/ura-e2e/opencode-");
  const launch = launchOpencode({
    bin: clientBinPath("opencode"),
    root,
    // The launcher appends /v1 (OpenCode's baseURL); the episode's Responses base URL ends in /v1.
    baseUrl: episode.urls.responses.replace(/\/v1$/, ""),
    mcpUrl: episode.urls.mcp,
    mcpToken: episode.mcp_token,
    apiKey: episode.ingress_key,
    model: "ura-qwen",
    variant: undefined,
  });
  const config = JSON.parse(readFileSync(launch.env.OPENCODE_CONFIG ?? "", "utf8")) as { plugin: string[] };
  expect(config.plugin).toEqual([`file://${resolve(repoRoot, "manifests/opencode/ura-call-id.ts")}`]);
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
  const context = `opencode exit ${code}\nstdout:\n${stdout.slice(-4000)}\nstderr:\n${stderr.slice(-4000)}\nsidecar:\n${sidecar.output().slice(-4000)}`;
  return { stdout, code, context, ms: Date.now() - started };
}

async function runSmokeEpisode(): Promise<void> {
  assertPrerequisites();
  const upstream = await serveScriptedUpstream();
  const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
  try {
    const episode = await sidecar.createEpisode({ client: "opencode" });
    const { stdout, code, context, ms } = await runOpencode(sidecar, episode);

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
    expect(status.mcp).toMatchObject({ initialized: true, tools_listed: true });

    // Every claim used the `_callID` the plugin put into the MCP arguments, and the claimed
    // ids are exactly the function-call ids the sidecar delivered (observe, record, record, finish).
    const ledger = readLines(join(episode.records_dir, "ledger.jsonl"));
    const claimed = ledger.filter((e) => e.type === "claimed");
    expect(claimed.map((e) => e.by)).toEqual(["call_id", "call_id", "call_id", "call_id"]);
    const delivered = await deliveredCallIds(episode.records_dir);
    expect(delivered).toHaveLength(4);
    expect(claimed.map((e) => e.callId)).toEqual(delivered);
    expect(ledger.filter((e) => e.type === "refused")).toEqual([]);

    // The model-visible history never carries `_callID`: not in what OpenCode sent us, not upstream.
    const clientRequests = readLines(join(episode.records_dir, "exchanges.jsonl")).filter(
      (l) => l.stage === "client_request",
    );
    expect(clientRequests.length).toBeGreaterThanOrEqual(5);
    for (const request of clientRequests) expect(JSON.stringify(request.body)).not.toContain("_callID");
    expect(upstream.scripted.received.length).toBeGreaterThanOrEqual(5);
    for (const request of upstream.scripted.received)
      expect(JSON.stringify(request.body)).not.toContain("_callID");

    // Only the robot tools were offered (permission "*": deny), under OpenCode's names.
    const toolNames = (upstream.scripted.received as { body: { tools?: { function: { name: string } }[] } }[])
      .flatMap((r) => r.body.tools ?? [])
      .map((t) => t.function.name);
    expect(new Set(toolNames)).toEqual(new Set(["ura_observe", "ura_record", "ura_finish"]));

    // Every exchange (the title request and the four agent turns) was delivered.
    const statuses = readLines(join(episode.records_dir, "exchanges.jsonl")).filter(
      (l) => l.stage === "status",
    );
    expect(statuses.map((s) => s.status)).toEqual(statuses.map(() => "delivered"));
    expect(stdout).toContain("The episode is complete");
    console.error(`opencode smoke episode: ${ms} ms, ${statuses.length} exchanges`);
  } finally {
    const exit = await sidecar.stop();
    upstream.stop();
    expect(exit).toBe(0);
  }
}

/**
 * Transient upstream trouble: the sidecar's own retries are spent and OpenCode gets
 * a 503 in the OpenAI envelope before any byte of a stream. OpenCode retries; the
 * episode is already in provider_error, so the retry gets a final 400 and OpenCode
 * stops — no tool call registered. (The title request runs concurrently, so it may
 * be the one that meets the failing upstream first.) OpenCode retries even a 400
 * whose text looks transient ("…HTTP 503…"): see src/ingress/responses/errors.ts.
 */
async function runUpstreamFailure(): Promise<void> {
  assertPrerequisites();
  const upstream = await serveScriptedUpstream();
  const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
  try {
    const episode = await sidecar.createEpisode({ client: "opencode" });
    upstream.scripted.enqueueFaults(
      Array.from({ length: 10 }, () => ({ kind: "status" as const, status: 503 })),
    );
    const { stdout, code, context, ms } = await runOpencode(sidecar, episode);
    const statuses = readLines(join(episode.records_dir, "exchanges.jsonl")).filter(
      (l) => l.stage === "status",
    );
    const httpStatuses = statuses.map((s) => (s.error as { http_status: number } | undefined)?.http_status);
    if (!httpStatuses.includes(503)) console.error(context);
    expect(httpStatuses).toContain(503);
    expect(httpStatuses.at(-1)).toBe(400);
    expect(httpStatuses.every((s) => s === 503 || s === 400)).toBe(true);
    // The title request and the agent turn: each retried a 503 once at most, and never a 400.
    expect(httpStatuses.filter((s) => s === 400).length).toBeLessThanOrEqual(2);
    const status = await sidecar.episode(episode.id);
    expect(status.failure).toMatchObject({ reason: "provider_error" });
    expect(upstream.scripted.received.length).toBeLessThanOrEqual(6); // the sidecar's own attempts only
    expect(
      readLines(join(episode.records_dir, "ledger.jsonl")).filter((e) => e.type === "registered"),
    ).toEqual([]);
    console.error(
      `opencode stopped ${ms} ms after start (exit ${code}); statuses ${JSON.stringify(httpStatuses)}; ${stdout.length} bytes of output`,
    );
  } finally {
    await sidecar.stop();
    upstream.stop();
  }
}

if (canUnshare) {
  test(
    "OpenCode smoke episode, inside a loopback-only network namespace",
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
          "./test/e2e/opencode.e2e.test.ts",
        ],
        {
          cwd: repoRoot,
          env: { ...process.env, URA_E2E_NETNS: "1" },
          stdio: ["ignore", "inherit", "inherit"],
        },
      );
      expect(await proc.exited).toBe(0);
    },
    timeoutMs + 15_000,
  );
} else {
  describe(
    insideNamespace ? "inside the network namespace" : "on loopback (no network namespace available)",
    () => {
      test(
        "OpenCode smoke episode: every acceptance check, claims by the plugin's _callID, no _callID in history",
        runSmokeEpisode,
        timeoutMs,
      );
      test(
        "OpenCode against a failing upstream: 503, then a final 400, then it stops",
        runUpstreamFailure,
        timeoutMs,
      );
    },
  );
}
