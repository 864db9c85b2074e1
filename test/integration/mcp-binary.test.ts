/**
 * The `ura` MCP server of the compiled binary, driven by the real MCP SDK client
 * with the calls of real model exchanges (Anthropic Messages ingress, embedded
 * scripted upstream, inert executor): tokens, forged callbacks, claim-once,
 * batch serialisation as the executor saw it, and the finish receipt.
 * Needs `make build` (dist/ura-sidecar).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cancelledEpisodeSchema } from "../../src/episodes/episode-status.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";
import { connectMcp, smokeMessagesTools } from "../support/smoke-mcp.ts";

const ackDelayMs = 60;
let sidecar: SidecarProcess;

beforeAll(async () => {
  sidecar = await startSidecarProcess({
    config: {
      executor: { kind: "inert", ack_delay_ms: ackDelayMs },
      delivery: { wait_ms: 2_000, previous_ack_wait_ms: 5_000 },
      log_level: "warn",
    },
  });
});
afterAll(async () => {
  await sidecar.stopCleanly();
});

const tools = smokeMessagesTools;

type Block = Record<string, unknown> & { type: string };
type ToolUse = { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

/** A Messages request as Claude Code would send it. */
function postMessages(episode: LaunchInfo, messages: unknown[]): Promise<Response> {
  return fetch(`${episode.urls.anthropic}/v1/messages`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": episode.ingress_key,
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify({ model: "qwen3-vl-plus", max_tokens: 1024, messages, tools }),
  });
}

/** One model exchange through the Messages ingress. */
async function exchange(episode: LaunchInfo, messages: unknown[]): Promise<Block[]> {
  const res = await postMessages(episode, messages);
  expect(res.status).toBe(200);
  return ((await res.json()) as { content: Block[] }).content;
}

const connect = (url: string, token: string | undefined) => connectMcp(url, token);

const text = (result: unknown) =>
  ((result as { content: { type: string; text?: string }[] }).content ?? [])
    .map((p) => p.text ?? `[${p.type}]`)
    .join("\n");

function journal(episode: LaunchInfo): Record<string, unknown>[] {
  return readFileSync(join(episode.records_dir, "ledger.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("ura MCP server in the compiled binary", () => {
  test("401 without a token, with a wrong token and with another episode's token", async () => {
    const a = await sidecar.createEpisode();
    const b = await sidecar.createEpisode();
    const init = {
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "0" } },
    };
    for (const headers of [
      {} as Record<string, string>,
      { authorization: "Bearer nope" },
      { authorization: `Bearer ${b.mcp_token}` },
    ]) {
      const res = await fetch(a.urls.mcp, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
        body: JSON.stringify(init),
      });
      expect(res.status).toBe(401);
    }
    await expect(connect(a.urls.mcp, undefined)).rejects.toThrow();
    await expect(connect(a.urls.mcp, b.mcp_token)).rejects.toThrow();
    expect((await sidecar.episode(a.id)).mcp).toMatchObject({ initialized: false, tools_listed: false });
  });

  test("smoke episode: forged callbacks refused, claim-once, one batch serialised at the executor, finish → finished", async () => {
    const episode = await sidecar.createEpisode({ client: "claude" });
    const client = await connect(episode.urls.mcp, episode.mcp_token);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["observe", "record", "finish"]);

    // Nothing delivered yet: a callback is forged, whatever identity it claims.
    const forged = [
      await client.callTool({ name: "observe", arguments: {} }),
      await client.callTool({ name: "observe", arguments: {}, _meta: { callId: "call_1_0" } }),
      await client.callTool({ name: "record", arguments: { nonce: "x", _callID: "call_9_9" } }),
    ];
    for (const result of forged) {
      expect(result.isError).toBe(true);
      expect(text(result)).toContain("refused");
    }

    const history: unknown[] = [
      { role: "user", content: "Observe the scene, record the nonce twice, then finish." },
    ];
    const turn1 = await exchange(episode, history);
    const observeCall = turn1.find((b) => b.type === "tool_use") as ToolUse;
    expect(observeCall.name).toBe("mcp__ura__observe");
    const observed = await client.callTool({
      name: "observe",
      arguments: {},
      _meta: { "claudecode/toolUseId": observeCall.id },
    });
    expect(observed.isError).toBeFalsy();
    const parts = observed.content as { type: string; text?: string; data?: string; mimeType?: string }[];
    const image = parts.find((p) => p.type === "image");
    expect(image?.mimeType).toBe("image/png");
    const nonce = /nonce[\s:=]+"?([A-Za-z0-9_-]+)/.exec(text(observed))?.[1] ?? "";
    expect(nonce).not.toBe("");
    history.push(
      { role: "assistant", content: turn1 },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: observeCall.id,
            content: [
              { type: "text", text: text(observed).replace("[image]", "").trim() },
              { type: "image", source: { type: "base64", media_type: "image/png", data: image?.data } },
            ],
          },
        ],
      },
    );

    // Two identical record calls in one batch, sent concurrently with no identity (as Gemini CLI does).
    const turn2 = await exchange(episode, history);
    const records = turn2.filter((b) => b.type === "tool_use") as ToolUse[];
    expect(records.map((r) => [r.name, r.input])).toEqual([
      ["mcp__ura__record", { nonce }],
      ["mcp__ura__record", { nonce }],
    ]);
    const both = await Promise.all([
      client.callTool({ name: "record", arguments: { nonce } }),
      client.callTool({ name: "record", arguments: { nonce } }),
    ]);
    expect(both.map((r) => r.isError)).toEqual([undefined, undefined]);
    const third = await client.callTool({ name: "record", arguments: { nonce } });
    expect(third.isError).toBe(true);
    expect(text(third)).toContain("refused");

    const events = journal(episode);
    const at = (type: string, callId: string) =>
      events.find((e) => e.type === type && e.callId === callId)?.at as number;
    const [first, second] = records.map((r) => r.id) as [string, string];
    expect(
      events
        .filter((e) => e.type === "claimed" && (e.callId === first || e.callId === second))
        .map((e) => e.callId),
    ).toEqual([first, second]);
    expect(at("acknowledged", first) - at("submitted", first)).toBeGreaterThanOrEqual(ackDelayMs - 5);
    expect(at("submitted", second)).toBeGreaterThanOrEqual(at("acknowledged", first));
    const submittedOrder = events.filter((e) => e.type === "submitted").map((e) => e.callId);
    expect(submittedOrder).toEqual([observeCall.id, first, second]);

    history.push(
      { role: "assistant", content: turn2 },
      {
        role: "user",
        content: records.map((r) => ({
          type: "tool_result",
          tool_use_id: r.id,
          content: `recorded nonce: ${nonce}`,
        })),
      },
    );
    const turn3 = await exchange(episode, history);
    const finishCall = turn3.find((b) => b.type === "tool_use") as ToolUse;
    expect(finishCall.name).toBe("mcp__ura__finish");
    const finished = await client.callTool({
      name: "finish",
      arguments: finishCall.input,
      _meta: { "claudecode/toolUseId": finishCall.id },
    });
    expect(finished.isError).toBeFalsy();
    history.push(
      { role: "assistant", content: turn3 },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: finishCall.id, content: text(finished) }],
      },
    );
    const turn4 = await exchange(episode, history);
    expect(turn4.some((b) => b.type === "text")).toBe(true);

    const status = await sidecar.episode(episode.id);
    expect(status.state).toBe("finished");
    // The scripted model named the colour from the image it received, so the image reached the upstream.
    expect(status.result).toMatchObject({ submitted: true, correct: true });
    expect(status.counters).toMatchObject({
      delivered_exchanges: 4,
      tool_calls_admitted: 4,
      tool_calls_refused: 4,
    });
    expect(status.mcp).toMatchObject({ initialized: true, tools_listed: true });
    expect(events.filter((e) => e.type === "refused").map((e) => e.code)).toEqual([
      "no_match",
      "no_match",
      "no_match",
      "already_claimed",
    ]);
    await client.close();
  });

  test("max_turns: the exchange past the cap is refused with a final 400 and the episode fails", async () => {
    const episode = await sidecar.createEpisode({ max_turns: 1 });
    const messages = [{ role: "user", content: "hello" }];
    const first = await exchange(episode, messages);
    expect(first.length).toBeGreaterThan(0);
    const res = await postMessages(episode, messages);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("max_turns");
    const status = await sidecar.episode(episode.id);
    expect(status.state).toBe("failed");
    expect(status.failure).toMatchObject({ reason: "max_turns" });
    expect(status.counters).toMatchObject({ delivered_exchanges: 1, failed_exchanges: 1 });
  });

  test("cancel: a delivered but unclaimed call can no longer run, model requests are refused", async () => {
    const episode = await sidecar.createEpisode();
    const client = await connect(episode.urls.mcp, episode.mcp_token);
    const turn1 = await exchange(episode, [{ role: "user", content: "go" }]);
    const call = turn1.find((b) => b.type === "tool_use") as ToolUse;
    const cancelled = await sidecar.control(`/episodes/${episode.id}/cancel`, { method: "POST" });
    expect(cancelled.status).toBe(200);
    expect(cancelledEpisodeSchema.parse(await cancelled.json())).toMatchObject({
      state: "failed",
      failure: { reason: "cancelled" },
      drain: { unfinished: [] },
    });
    const late = await client.callTool({
      name: "observe",
      arguments: {},
      _meta: { "claudecode/toolUseId": call.id },
    });
    expect(late.isError).toBe(true);
    expect(text(late)).toContain("refused");
    const res = await postMessages(episode, [{ role: "user", content: "again" }]);
    expect(res.status).toBe(400);
    expect(journal(episode).some((e) => e.type === "submitted")).toBe(false);
    await client.close();
  });
});
