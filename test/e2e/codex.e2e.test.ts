/**
 * End to end with the real, pinned Codex CLI (`@openai/codex`, OpenAI Responses):
 * compiled sidecar (dist/ura-sidecar, `make build`), scripted upstream playing Qwen,
 * embedded inert executor. Codex declares the robot tools as the namespace
 * `mcp__ura`: Qwen sees them flattened (`mcp__ura__observe`) and Codex gets its
 * calls back as `{namespace, name}`. The smoke episode must pass every acceptance
 * check, and every call must be claimed by the `_meta.callId` Codex sends (= the
 * call id the sidecar delivered).
 *
 * Isolation: when `unshare -n` works, this file re-runs itself inside a
 * loopback-only network namespace (sidecar, upstream and CLI all in there);
 * otherwise it runs on loopback with the isolation settings of
 * fixtures/capture/launchers.ts (own CODEX_HOME with update checks and analytics
 * off, temp HOME, cwd outside any git checkout).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { launchCodex } from "../../fixtures/capture/launchers.ts";
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

type CallItem = { type: string; call_id: string; namespace?: string; name: string };

/** The function-call items the sidecar delivered, in delivery order, from its own records. */
async function deliveredCallItems(recordsDir: string): Promise<CallItem[]> {
  const items: CallItem[] = [];
  for (const line of readLines(join(recordsDir, "exchanges.jsonl"))) {
    if (line.stage !== "delivered" || typeof line.body !== "string") continue;
    for await (const event of readSse(new Response(line.body).body as ReadableStream<Uint8Array>)) {
      const data = JSON.parse(event.data) as { item?: CallItem };
      if (event.event === "response.output_item.done" && data.item?.type === "function_call")
        items.push(data.item);
    }
  }
  return items;
}

async function deliveredCallIds(recordsDir: string): Promise<string[]> {
  return (await deliveredCallItems(recordsDir)).map((i) => i.call_id);
}

function assertPrerequisites(): void {
  if (!existsSync(binaryPath)) throw new Error(`${binaryPath} is missing: run \`make build\` first`);
  const manifest = readClientManifest("codex");
  if (installedVersion("codex") !== manifest.version) {
    throw new Error(
      `Codex ${manifest.version} is not installed: run \`bun test/e2e/install-clients.ts codex\``,
    );
  }
}

async function runCodex(sidecar: SidecarProcess, episode: LaunchInfo) {
  mkdirSync("/var/tmp/ura-e2e", { recursive: true });
  const root = mkdtempSync("/var/tmp/ura-e2e/codex-");
  const launch = launchCodex({
    bin: clientBinPath("codex"),
    root,
    // The launcher appends /v1 (Codex's base_url); the episode's Responses base URL ends in /v1.
    baseUrl: episode.urls.responses.replace(/\/v1$/, ""),
    mcpUrl: episode.urls.mcp,
    mcpToken: episode.mcp_token,
    apiKey: episode.ingress_key,
    model: "ura-qwen",
    variant: undefined,
  });
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
  const context = `codex exit ${code}\nstdout:\n${stdout.slice(-4000)}\nstderr:\n${stderr.slice(-4000)}\nsidecar:\n${sidecar.output().slice(-4000)}`;
  return { stdout, code, context, ms: Date.now() - started };
}

async function runSmokeEpisode(): Promise<void> {
  assertPrerequisites();
  const upstream = await serveScriptedUpstream();
  const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
  try {
    const episode = await sidecar.createEpisode({ client: "codex" });
    const { stdout, code, context, ms } = await runCodex(sidecar, episode);

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

    // Every claim used the call id Codex put in `_meta.callId`, and the claimed ids are
    // exactly the function-call ids the sidecar delivered (observe, record, record, finish).
    const ledger = readLines(join(episode.records_dir, "ledger.jsonl"));
    const claimed = ledger.filter((e) => e.type === "claimed");
    expect(claimed.map((e) => e.by)).toEqual(["call_id", "call_id", "call_id", "call_id"]);
    const delivered = await deliveredCallIds(episode.records_dir);
    expect(delivered).toHaveLength(4);
    expect(claimed.map((e) => e.callId)).toEqual(delivered);
    expect(ledger.filter((e) => e.type === "refused")).toEqual([]);

    // Codex got each robot call as {namespace:"mcp__ura", name} and echoed it so in its history.
    const items = await deliveredCallItems(episode.records_dir);
    expect(items.map((i) => `${i.namespace}/${i.name}`)).toEqual([
      "mcp__ura/observe",
      "mcp__ura/record",
      "mcp__ura/record",
      "mcp__ura/finish",
    ]);
    const clientRequests = readLines(join(episode.records_dir, "exchanges.jsonl")).filter(
      (l) => l.stage === "client_request",
    );
    const lastBody = clientRequests.at(-1)?.body as {
      input?: { type: string; namespace?: string; name?: string }[];
    };
    const lastInput = lastBody?.input ?? [];
    expect(
      lastInput.filter((i) => i.type === "function_call").map((i) => `${i.namespace}/${i.name}`),
    ).toEqual(items.map((i) => `${i.namespace}/${i.name}`));

    // Upstream saw the robot tools flattened, and never Codex's web_search or multi_agent_v1 tools.
    for (const request of upstream.scripted.received as {
      body: { tools?: { function: { name: string } }[] };
    }[]) {
      const names = (request.body.tools ?? []).map((t) => t.function.name);
      expect(names).toEqual(
        expect.arrayContaining(["mcp__ura__observe", "mcp__ura__record", "mcp__ura__finish"]),
      );
      expect(names.filter((n) => n.includes("web_search") || n.includes("spawn_agent"))).toEqual([]);
    }
    const ignored = readLines(join(episode.records_dir, "exchanges.jsonl")).find(
      (l) => l.stage === "upstream_request",
    )?.ignored;
    expect(JSON.stringify(ignored)).toContain("built-in tool web_search not offered");
    expect(JSON.stringify(ignored)).toContain("namespace multi_agent_v1");

    // Every exchange (the four agent turns) was delivered.
    const statuses = readLines(join(episode.records_dir, "exchanges.jsonl")).filter(
      (l) => l.stage === "status",
    );
    expect(statuses.map((s) => s.status)).toEqual(statuses.map(() => "delivered"));
    expect(stdout).toContain("The episode is complete");
    console.error(`codex smoke episode: ${ms} ms, ${statuses.length} exchanges`);
  } finally {
    const exit = await sidecar.stop();
    upstream.stop();
    expect(exit).toBe(0);
  }
}

/**
 * Transient upstream trouble: the sidecar's own retries are spent and Codex gets a
 * 503 in the OpenAI envelope before any byte of a stream. Codex retries; the
 * episode is already in provider_error, so the retry gets a final 400 and Codex
 * stops — no further upstream work, no tool call registered.
 */
async function runUpstreamFailure(): Promise<void> {
  assertPrerequisites();
  const upstream = await serveScriptedUpstream();
  const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
  try {
    const episode = await sidecar.createEpisode({ client: "codex" });
    upstream.scripted.enqueueFaults(
      Array.from({ length: 10 }, () => ({ kind: "status" as const, status: 503 })),
    );
    const { code, context, ms } = await runCodex(sidecar, episode);
    const statuses = readLines(join(episode.records_dir, "exchanges.jsonl")).filter(
      (l) => l.stage === "status",
    );
    const errors = statuses.map((s) => (s.error as { kind: string; http_status: number }).http_status);
    if (errors[0] !== 503) console.error(context);
    expect(errors).toEqual([503, 400]);
    const status = await sidecar.episode(episode.id);
    expect(status.failure).toMatchObject({ reason: "provider_error" });
    expect(upstream.scripted.received).toHaveLength(3); // the sidecar's own attempts (retry config)
    expect(code).not.toBe(0);
    expect(
      readLines(join(episode.records_dir, "ledger.jsonl")).filter((e) => e.type === "registered"),
    ).toEqual([]);
    console.error(`codex stopped ${ms} ms after start, after one retry of the 503`);
  } finally {
    await sidecar.stop();
    upstream.stop();
  }
}

if (canUnshare) {
  test(
    "Codex smoke episode, inside a loopback-only network namespace",
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
          "./test/e2e/codex.e2e.test.ts",
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
        "Codex smoke episode: every acceptance check, namespace calls, claims by _meta.callId",
        runSmokeEpisode,
        timeoutMs,
      );
      test(
        "Codex against a failing upstream: 503, then a final 400, then it stops",
        runUpstreamFailure,
        timeoutMs,
      );
    },
  );
}
