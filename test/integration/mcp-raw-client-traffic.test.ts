/**
 * The MCP server in process against tools/call bodies captured from real clients
 * (fixtures/mcp/<client>-tools-call): they are matched by the call id they carry,
 * and OpenCode's notifications/cancelled does not drop a call's answer.
 */
import { describe, expect, test } from "bun:test";
import type { Executor } from "../../src/executor/executor.ts";
import { manifestSchema } from "../../src/manifest/manifest-schema.ts";
import { deliverBatch, rawInitialize, readJournal, testSidecarsPerTest } from "../support/mcp-kit.ts";

const startSidecar = testSidecarsPerTest();

async function start(executor: Executor) {
  const sidecar = await startSidecar({ createExecutor: () => executor });
  return sidecar;
}

describe("raw client traffic", () => {
  const fixture = (name: string) =>
    Bun.file(new URL(`../../fixtures/mcp/${name}/client-request.json`, import.meta.url)).json();

  async function openRawSession(url: string, token: string) {
    const headers = {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    const opened = await fetch(url, { method: "POST", headers, body: JSON.stringify(rawInitialize) });
    await opened.text();
    const session = {
      ...headers,
      "mcp-session-id": opened.headers.get("mcp-session-id") ?? "",
      "mcp-protocol-version": "2025-11-25",
    };
    await fetch(url, {
      method: "POST",
      headers: session,
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    });
    return (body: unknown) => fetch(url, { method: "POST", headers: session, body: JSON.stringify(body) });
  }

  type Message = {
    id?: unknown;
    method?: string;
    params?: Record<string, unknown>;
    result?: { isError?: boolean; content: unknown[] };
  };
  /** The JSON-RPC messages of an SSE (or JSON) answer, in order. */
  async function messagesOf(res: Response): Promise<Message[]> {
    const body = await res.text();
    if (body.startsWith("{")) return [JSON.parse(body)];
    return [...body.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1] ?? "null"));
  }
  /** The answer among them: the one message with an id (the others are notifications). */
  async function answerOf(res: Response): Promise<Message> {
    const answers = (await messagesOf(res)).filter((m) => m.id !== undefined);
    expect(answers).toHaveLength(1);
    return answers[0] ?? {};
  }

  const cameraManifest = manifestSchema.parse({
    finish_tool: "observe",
    tools: [
      {
        name: "observe",
        description: "look",
        input_schema: {
          type: "object",
          properties: { camera: { type: "string" } },
          additionalProperties: false,
        },
        route: "observe",
      },
    ],
  });

  test("captured Claude Code and OpenCode tools/call bodies are matched by the call id they carry", async () => {
    const executor: Executor = {
      submit: async (j) => ({ jobId: `job_${j.callId}` }),
      receipt: async () => ({ ok: true, content: [{ type: "text", text: "seen" }] }),
    };
    const { episodes, mcpUrl } = await start(executor);
    const a = episodes.create({ max_turns: 0, manifest: cameraManifest });
    // Both captures use JSON-RPC id 2, so each gets its own session (as two clients would).
    const callA = await openRawSession(mcpUrl(a), a.mcpToken);
    const callB = await openRawSession(mcpUrl(a), a.mcpToken);
    deliverBatch(a, [
      { id: "call_resp_6", tool: "observe", args: { camera: "front" } },
      { id: "toolu_0006", tool: "observe", args: { camera: "front" } },
    ]);
    // The second call of the batch arrives first: identity picks the call, batch order decides when it runs.
    const claude = callA(await fixture("claude-tools-call"));
    await Bun.sleep(20);
    const opencode = await answerOf(await callB(await fixture("opencode-tools-call")));
    expect(opencode.result?.isError).toBeUndefined();
    // Claude Code's captured call carries progressToken 2: progress (its wait for the batch's first call) comes before the answer.
    const claudeMessages = await messagesOf(await claude);
    const progress = claudeMessages.filter((m) => m.method === "notifications/progress");
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.map((m) => m.params?.progressToken)).toEqual(progress.map(() => 2));
    expect(claudeMessages.at(-1)?.result?.content).toEqual([{ type: "text", text: "seen" }]);
    const claims = readJournal(a).filter((e) => e.type === "claimed");
    expect(claims.map((e) => [e.callId, e.by])).toEqual([
      ["toolu_0006", "call_id"],
      ["call_resp_6", "call_id"],
    ]);
    const submitted = readJournal(a)
      .filter((e) => e.type === "submitted")
      .map((e) => e.callId);
    expect(submitted).toEqual(["call_resp_6", "toolu_0006"]);
  });

  test("Claude Code 2.1.332 opens with server/discover: a JSON-RPC error and no session; its initialize and tools/call then work", async () => {
    type Recorded = { method: string; headers: Record<string, string>; body: { method?: string } | null };
    const session = (await Bun.file(
      new URL("../../fixtures/mcp/claude-2.1.332-tools-call/mcp-session.json", import.meta.url),
    ).json()) as Recorded[];
    const [discover, initialize] = session;
    expect(discover?.body?.method).toBe("server/discover");
    expect(initialize?.body?.method).toBe("initialize");
    const executor: Executor = {
      submit: async (j) => ({ jobId: `job_${j.callId}` }),
      receipt: async () => ({ ok: true, content: [{ type: "text", text: "seen" }] }),
    };
    const { episodes, mcpUrl } = await start(executor);
    const a = episodes.create({ max_turns: 0, manifest: cameraManifest });
    const headers = {
      authorization: `Bearer ${a.mcpToken}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "user-agent": discover?.headers["user-agent"] ?? "",
    };
    const probe = await fetch(mcpUrl(a), { method: "POST", headers, body: JSON.stringify(discover?.body) });
    expect(probe.status).toBe(400);
    expect(probe.headers.get("mcp-session-id")).toBeNull();
    expect(await probe.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 }, id: null });
    expect(a.describe().mcp).toMatchObject({ initialized: false, sessions_opened: 0 });
    // What it sends next, as recorded: initialize opens the session; the captured call is claimed by its tool_use id.
    const call = await openRawSession(mcpUrl(a), a.mcpToken);
    deliverBatch(a, [{ id: "toolu_0006", tool: "observe", args: { camera: "front" } }]);
    const answer = await answerOf(await call(await fixture("claude-2.1.332-tools-call")));
    expect(answer.result?.content).toEqual([{ type: "text", text: "seen" }]);
    expect(
      readJournal(a)
        .filter((e) => e.type === "claimed")
        .map((e) => [e.callId, e.by]),
    ).toEqual([["toolu_0006", "call_id"]]);
  });

  test("notifications/cancelled (OpenCode sends one per call) does not drop the call's answer", async () => {
    // Released by the test whether or not the sidecar has asked for the receipt yet (under load it may not have).
    const receipt = Promise.withResolvers<{ ok: true; content: { type: "text"; text: string }[] }>();
    const release = () => receipt.resolve({ ok: true, content: [{ type: "text", text: "done anyway" }] });
    const executor: Executor = {
      submit: async (j) => ({ jobId: `job_${j.callId}` }),
      receipt: () => receipt.promise,
    };
    const { episodes, mcpUrl } = await start(executor);
    const a = episodes.create({ max_turns: 0, manifest: cameraManifest });
    const call = await openRawSession(mcpUrl(a), a.mcpToken);
    deliverBatch(a, [{ id: "c1", tool: "observe", args: {} }]);
    const pending = call({
      jsonrpc: "2.0",
      id: 5,
      method: "tools/call",
      params: { name: "observe", arguments: {} },
    });
    await Bun.sleep(30);
    const cancel = await call({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 5, reason: "done" },
    });
    expect(cancel.status).toBe(202);
    release();
    const answer = await answerOf(await pending);
    expect(answer.id).toBe(5);
    expect(answer.result?.content).toEqual([{ type: "text", text: "done anyway" }]);
    expect(readJournal(a).at(-1)).toMatchObject({ type: "receipt", callId: "c1" });
  });
});
