/**
 * Progress notifications of a held MCP tool call in the compiled binary, seen by
 * the official MCP SDK client: a call carrying a progress token receives them
 * (its token, increasing progress, a message naming the state) and, with
 * `resetTimeoutOnProgress`, outlives a request timeout shorter than the call; a
 * call without a token receives none. Calls come from real model exchanges
 * (Messages ingress, embedded scripted upstream); the inert executor holds the
 * receipt. Needs `make build` (dist/ura-sidecar).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Progress, ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";
import { connectMcp, smokeMessagesTools } from "../support/smoke-mcp.ts";

const intervalMs = 300;
const receiptDelayMs = 2_000;
let sidecar: SidecarProcess;

beforeAll(async () => {
  sidecar = await startSidecarProcess({
    config: {
      executor: { kind: "inert", ack_delay_ms: 100, receipt_delay_ms: receiptDelayMs },
      mcp_progress_interval_ms: intervalMs,
      log_level: "warn",
    },
  });
});
afterAll(async () => {
  await sidecar.stopCleanly();
});

const tools = smokeMessagesTools;

/** One Messages exchange that delivers an observe call; its tool-use id. */
async function deliveredObserve(episode: LaunchInfo): Promise<string> {
  const res = await fetch(`${episode.urls.anthropic}/v1/messages`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": episode.ingress_key,
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify({
      model: "qwen3-vl-plus",
      max_tokens: 1024,
      messages: [{ role: "user", content: "Observe the scene." }],
      tools,
    }),
  });
  expect(res.status).toBe(200);
  const content = ((await res.json()) as { content: { type: string; id?: string; name?: string }[] }).content;
  const call = content.find((b) => b.type === "tool_use");
  expect(call?.name).toBe("mcp__ura__observe");
  return call?.id ?? "";
}

const connect = (episode: LaunchInfo) => connectMcp(episode.urls.mcp, episode.mcp_token, "ura-progress-test");

describe("progress notifications of a held tool call (compiled binary, MCP SDK client)", () => {
  test("a call with a progress token gets increasing progress naming the state and outlives a shorter timeout reset by it", async () => {
    const episode = await sidecar.createEpisode({ client: "claude" });
    const client = await connect(episode);
    const toolUseId = await deliveredObserve(episode);
    const seen: Progress[] = [];
    const started = Date.now();
    const result = await client.callTool(
      { name: "observe", arguments: {}, _meta: { "claudecode/toolUseId": toolUseId } },
      undefined,
      { timeout: 1_000, resetTimeoutOnProgress: true, onprogress: (p) => seen.push(p) },
    );
    const elapsed = Date.now() - started;
    expect(result.isError).toBeFalsy();
    expect(elapsed).toBeGreaterThan(1_000 + 500);
    // Receipt after 2 s, one notification every 300 ms: a few of them, in order.
    expect(seen.length).toBeGreaterThanOrEqual(4);
    expect(seen.map((p) => p.progress)).toEqual(seen.map((_, i) => i + 1));
    expect(seen.every((p) => p.total === undefined)).toBe(true);
    expect(seen.at(-1)?.message).toMatch(
      /^acknowledged by the robot controller as job \S+, waiting for its receipt/,
    );
    expect(seen.some((p) => p.message?.startsWith("submitting to the robot controller"))).toBe(true);
    const countAtResult = seen.length;
    await Bun.sleep(3 * intervalMs);
    expect(seen.length).toBe(countAtResult);
    await client.close();
  });

  test("without resetTimeoutOnProgress the same shorter timeout ends the call: the notifications are what keeps it alive", async () => {
    const episode = await sidecar.createEpisode({ client: "claude" });
    const client = await connect(episode);
    const toolUseId = await deliveredObserve(episode);
    await expect(
      client.callTool(
        { name: "observe", arguments: {}, _meta: { "claudecode/toolUseId": toolUseId } },
        undefined,
        { timeout: 1_000, onprogress: () => {} },
      ),
    ).rejects.toThrow(/timed out/i);
    await Bun.sleep(receiptDelayMs);
    await client.close();
  });

  test("a call without a progress token gets no progress notification", async () => {
    const episode = await sidecar.createEpisode({ client: "claude" });
    const client = await connect(episode);
    const notified: unknown[] = [];
    client.setNotificationHandler(ProgressNotificationSchema, (n) => {
      notified.push(n);
    });
    const toolUseId = await deliveredObserve(episode);
    const result = await client.callTool({
      name: "observe",
      arguments: {},
      _meta: { "claudecode/toolUseId": toolUseId },
    });
    expect(result.isError).toBeFalsy();
    expect(notified).toEqual([]);
    await client.close();
  });
});
