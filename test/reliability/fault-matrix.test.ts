/**
 * The fault matrix: every ingress × every upstream fault the scripted
 * upstream can inject, against the compiled binary (one process, a new episode
 * per case, a short retry policy so timeouts are fast). For each case: the
 * client gets its protocol's error envelope with a final status at once (every
 * fault ends the episode's model work, so no retry could help: a 5xx would only
 * cost the client a backoff and one more request), the exchange is recorded as failed with the error,
 * the episode is in provider_error, a follow-up request is a final 400 that
 * makes no upstream request, and the call the fault would have produced is
 * refused over MCP (real SDK client) with nothing registered in the ledger.
 * A `slow` answer within the timeout is the control case: delivered, claimable.
 * Needs `make build` (dist/ura-sidecar).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { ErrorKind } from "../../src/lib/errors.ts";
import type { Fault } from "../../src/scripted-upstream/faults.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { mcpClient, textOf } from "../support/hardening-kit.ts";
import { ingressKits, protocols, readJsonLines } from "../support/ingress-kit.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

const maxAttempts = 2;
const idleTimeoutMs = 500;

type FaultCase = {
  name: string;
  fault: Fault;
  /** What the sidecar must make of it. */
  kind: ErrorKind;
  /** Upstream attempts the fault costs (a retryable fault is injected into each). */
  attempts: number;
  /** Words the client's error message must contain. */
  says: RegExp;
  /** The robot call this fault would have produced had the exchange succeeded. */
  wouldCall: { tool: string; args: Record<string, unknown> };
};

// The scripted brain's first answer is observe {}; the tool-call faults use the first declared tool (record).
const observe = { tool: "observe", args: {} };
const recordAbc = { tool: "record", args: { nonce: "abc" } };

/** A transient fault is injected into every attempt the retry policy makes; any other costs one. */
const faultCase = (
  name: string,
  fault: Fault,
  kind: ErrorKind,
  says: RegExp,
  wouldCall: FaultCase["wouldCall"] = observe,
): FaultCase => ({
  name,
  fault,
  kind,
  attempts: kind === "upstream_transient" ? maxAttempts : 1,
  says,
  wouldCall,
});

const faultCases: FaultCase[] = [
  ...[429, 500, 503].map((status) =>
    faultCase(
      `status ${status}`,
      { kind: "status", status },
      "upstream_transient",
      new RegExp(`HTTP ${status}.*after ${maxAttempts} attempts`),
    ),
  ),
  faultCase(
    "silent upstream",
    { kind: "timeout" },
    "upstream_transient",
    /no byte for 500 ms \(upstream\.idle_timeout_ms\).*after 2 attempts/,
  ),
  faultCase("connection reset", { kind: "reset" }, "upstream_transient", /connection to the upstream failed/),
  faultCase(
    "cut mid tool call",
    { kind: "cut_mid_tool_call" },
    "upstream_transient",
    /ended before completion.*after 2 attempts/,
    recordAbc,
  ),
  faultCase(
    "invalid JSON arguments",
    { kind: "invalid_json_args" },
    "upstream_invalid",
    /not valid JSON/,
    recordAbc,
  ),
  faultCase(
    "undeclared tool",
    { kind: "undeclared_tool" },
    "upstream_invalid",
    /launch_the_arm.*did not declare/,
    {
      tool: "launch_the_arm",
      args: {},
    },
  ),
  faultCase("empty choices", { kind: "empty_choices" }, "upstream_invalid", /no choices/),
  faultCase(
    "enable_thinking 400",
    { kind: "thinking_400" },
    "upstream_rejected",
    /HTTP 400.*enable_thinking/,
  ),
];

let upstream: Awaited<ReturnType<typeof serveScriptedUpstream>>;
let sidecar: SidecarProcess;
let casesRun = 0;

beforeAll(async () => {
  upstream = await serveScriptedUpstream();
  sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    config: {
      upstream: {
        retry: { max_attempts: maxAttempts, initial_backoff_ms: 1 },
        idle_timeout_ms: idleTimeoutMs,
      },
      log_level: "warn",
    },
  });
});
afterAll(async () => {
  console.log(
    `fault matrix: ${casesRun} cases (${protocols.length} ingresses × ${faultCases.length} faults, plus ${protocols.length} control cases)`,
  );
  await sidecar.stopCleanly();
  upstream.stop();
});

async function script(path: string, body?: unknown): Promise<void> {
  const res = await fetch(`${upstream.origin}/__script/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });
  expect(res.status).toBe(200);
}

describe.each([...protocols])("fault matrix: %s ingress", (protocol) => {
  const kit = ingressKits[protocol];
  const send = (episode: LaunchInfo) =>
    fetch(`${sidecar.url}${kit.path(episode.id, "qwen3-vl-plus", true)}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...kit.headers(episode.ingress_key) },
      body: JSON.stringify(kit.firstTurn(true)),
    });

  for (const c of faultCases) {
    test(`${c.name} → ${c.kind}, a final 400 at once, recorded failed, provider_error, follow-up 400, no executable call`, async () => {
      await script("reset");
      await script("faults", { faults: Array.from({ length: c.attempts }, () => c.fault) });
      const episode = await sidecar.createEpisode();

      // 1. The client's error: this protocol's envelope, final at once, naming the fault and the episode's end.
      const res = await send(episode);
      const expected = kit.expected(c.kind === "upstream_rejected" ? c.kind : "episode_closed");
      const body = await res.json();
      expect({ status: res.status, type: kit.readError(res.status, body).type }).toEqual(expected);
      expect(res.status).toBe(400);
      // The OpenAI envelope breaks OpenCode's retry patterns ("503") in a final message with a zero-width space.
      const message = kit.readError(res.status, body).message.replaceAll("\u200b", "");
      expect(message).toMatch(c.says);
      if (c.kind !== "upstream_rejected") expect(message).toMatch(/provider_error.*retry cannot succeed/);
      expect(upstream.scripted.received.length).toBe(c.attempts);
      expect(upstream.scripted.received.every((r) => r.fault === c.fault.kind)).toBe(true);

      // 2. Recorded as failed, with the error.
      const exchanges = await readJsonLines(join(episode.records_dir, "exchanges.jsonl"));
      const statuses = exchanges.filter((l) => l.stage === "status");
      expect(statuses).toHaveLength(1);
      expect(statuses[0]).toMatchObject({
        status: "failed",
        error: {
          kind: c.kind,
          http_status: 400,
        },
        episode_state: "failed",
      });
      expect(String((statuses[0]?.error as { message?: string } | undefined)?.message)).toMatch(c.says);
      expect(exchanges.some((l) => l.stage === "delivered")).toBe(false);

      // 3. The episode is in provider_error.
      const status = await sidecar.episode(episode.id);
      expect(status.state).toBe("failed");
      expect(JSON.stringify(status.failure)).toContain("provider_error");

      // 4. A follow-up (the client's retry) is a final 400 and costs no upstream request.
      const retry = await send(episode);
      const retryBody = await retry.json();
      expect(retry.status).toBe(400);
      expect(kit.readError(400, retryBody)).toEqual({
        type: kit.expected("episode_closed").type,
        message: expect.stringMatching(/provider_error|closed|failed/) as unknown as string,
      });
      expect(upstream.scripted.received.length).toBe(c.attempts);

      // 5. The call the fault would have produced is not executable, and nothing was registered.
      const client = await mcpClient(episode);
      try {
        const result = await client.callTool({ name: c.wouldCall.tool, arguments: c.wouldCall.args });
        expect(result.isError).toBe(true);
        expect(textOf(result)).toContain("refused");
      } finally {
        await client.close();
      }
      const journal = await readJsonLines(join(episode.records_dir, "ledger.jsonl"));
      expect(
        journal.filter((e) => e.type === "registered" || e.type === "claimed" || e.type === "submitted"),
      ).toEqual([]);
      expect(journal.filter((e) => e.type === "refused")).toHaveLength(1);
      expect((await sidecar.episode(episode.id)).counters).toMatchObject({
        tool_calls_admitted: 0,
        tool_calls_refused: 1,
      });
      casesRun += 1;
    });
  }

  test("control: a slow answer within the timeout is delivered and its call is claimable once", async () => {
    await script("reset");
    await script("faults", { faults: [{ kind: "slow", ms: 50 }] });
    const episode = await sidecar.createEpisode();
    const res = await send(episode);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain(kit.toolName("observe"));
    const statuses = (await readJsonLines(join(episode.records_dir, "exchanges.jsonl"))).filter(
      (l) => l.stage === "status",
    );
    expect(statuses).toMatchObject([{ status: "delivered" }]);
    expect((await sidecar.episode(episode.id)).state).toBe("running");
    const client = await mcpClient(episode);
    try {
      const first = await client.callTool({ name: "observe", arguments: {} });
      expect(first.isError).toBeFalsy();
      const again = await client.callTool({ name: "observe", arguments: {} });
      expect(again.isError).toBe(true);
    } finally {
      await client.close();
    }
    casesRun += 1;
  });
});
