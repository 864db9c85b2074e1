import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  connectMcp,
  deliverBatch,
  plainManifest,
  postMcp,
  rawInitialize,
  readJournal,
  testSidecarsPerTest,
  textOf,
} from "../../test/support/mcp-kit.ts";
import type { Executor, Receipt } from "../executor/executor.ts";
import { createInertExecutor, type InertExecutor } from "../executor/inert-executor.ts";

const startSidecar = testSidecarsPerTest();

async function setup(options: Parameters<typeof startSidecar>[0] = {}) {
  const executors: InertExecutor[] = [];
  const sidecar = await startSidecar({
    createExecutor: () => {
      const executor = createInertExecutor({ random: () => 0.4, newNonce: () => "n0nce42" });
      executors.push(executor);
      return executor;
    },
    ...options,
  });
  return { ...sidecar, executors };
}

/** A sidecar with one episode (max_turns 0) whose MCP client is connected with the episode's token. */
async function connectedEpisode() {
  const sidecar = await setup();
  const a = sidecar.episodes.create({ max_turns: 0 });
  const { client } = await connectMcp(sidecar.mcpUrl(a), a.mcpToken);
  return { ...sidecar, a, client };
}

const post = postMcp;
const initializeBody = rawInitialize;

describe("MCP endpoint access", () => {
  test("no token, a wrong token and another episode's token get 401; the right token opens a session", async () => {
    const { episodes, mcpUrl } = await setup();
    const a = episodes.create({ max_turns: 0 });
    const b = episodes.create({ max_turns: 0 });
    expect((await post(mcpUrl(a), {})).status).toBe(401);
    expect((await post(mcpUrl(a), { authorization: "Bearer wrong" })).status).toBe(401);
    const crossed = await post(mcpUrl(a), { authorization: `Bearer ${b.mcpToken}` });
    expect(crossed.status).toBe(401);
    expect(crossed.headers.get("www-authenticate")).toContain("Bearer");
    expect(a.mcp.initialized).toBe(false);
    const ok = await post(mcpUrl(a), {
      authorization: `Bearer ${a.mcpToken}`,
      "user-agent": "claude-code/2.1.197",
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("mcp-session-id")).toBeTruthy();
    expect(a.mcp).toMatchObject({ initialized: true, user_agent: "claude-code/2.1.197", sessions_opened: 1 });
    expect(b.mcp.initialized).toBe(false);
  });

  test("an SDK client without the token cannot connect", async () => {
    const { episodes, mcpUrl } = await setup();
    const a = episodes.create({ max_turns: 0 });
    await expect(connectMcp(mcpUrl(a), undefined)).rejects.toThrow();
    await expect(connectMcp(mcpUrl(a), "ura_mcp_forged")).rejects.toThrow();
  });

  test("a session of one episode is not found under another episode", async () => {
    const { episodes, mcpUrl } = await setup();
    const a = episodes.create({ max_turns: 0 });
    const b = episodes.create({ max_turns: 0 });
    const opened = await post(mcpUrl(a), { authorization: `Bearer ${a.mcpToken}` });
    const session = opened.headers.get("mcp-session-id") ?? "";
    const reused = await post(
      mcpUrl(b),
      { authorization: `Bearer ${b.mcpToken}`, "mcp-session-id": session },
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
    );
    expect(reused.status).toBe(404);
  });

  test("unknown or path-like episode ids are 404; foreign Host and Origin headers are 403", async () => {
    const { app, episodes, url } = await setup();
    const a = episodes.create({ max_turns: 0 });
    expect((await post(`${url}/e/ep_nope/mcp`, {})).status).toBe(404);
    expect((await post(`${url}/e/..%2Fetc/mcp`, {})).status).toBe(404);
    const auth = {
      authorization: `Bearer ${a.mcpToken}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    const body = JSON.stringify(initializeBody);
    const rebound = await app.request(`/e/${a.id}/mcp`, {
      method: "POST",
      headers: { ...auth, host: "evil.example:8787" },
      body,
    });
    expect(rebound.status).toBe(403);
    const origin = await app.request(`/e/${a.id}/mcp`, {
      method: "POST",
      headers: { ...auth, host: "127.0.0.1:1", origin: "http://evil.example" },
      body,
    });
    expect(origin.status).toBe(403);
    const local = await app.request(`/e/${a.id}/mcp`, {
      method: "POST",
      headers: { ...auth, host: "localhost:1", origin: "http://localhost:1" },
      body,
    });
    expect(local.status).toBe(200);
  });

  test("requests without a session must start with initialize; DELETE ends a session", async () => {
    const { episodes, mcpUrl } = await setup();
    const a = episodes.create({ max_turns: 0 });
    const auth = { authorization: `Bearer ${a.mcpToken}` };
    expect((await post(mcpUrl(a), auth, { jsonrpc: "2.0", id: 1, method: "tools/list" })).status).toBe(400);
    const { client, transport } = await connectMcp(mcpUrl(a), a.mcpToken);
    const session = transport.sessionId ?? "";
    await transport.terminateSession();
    expect(a.mcp.sessions_closed).toBe(1);
    const after = await post(
      mcpUrl(a),
      { ...auth, "mcp-session-id": session },
      { jsonrpc: "2.0", id: 9, method: "tools/list" },
    );
    expect(after.status).toBe(404);
    await client.close();
  });
});

describe("tools", () => {
  test("tools/list serves the manifest's input schemas verbatim and is recorded", async () => {
    const { a, client } = await connectedEpisode();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["observe", "record", "finish"]);
    expect(tools[1]?.inputSchema).toEqual(a.manifest.tools[1]?.input_schema as never);
    expect(a.mcp.tools_listed).toBe(true);
    await client.close();
  });

  test("a forged callback is refused, journaled, counted, and never reaches the executor", async () => {
    const { a, client, executors } = await connectedEpisode();
    const result = await client.callTool({ name: "observe", arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("refused");
    expect(a.counters.tool_calls_refused).toBe(1);
    expect(executors[0]?.jobs()).toEqual([]);
    expect(readJournal(a).at(-1)).toMatchObject({ type: "refused", tool: "observe", code: "no_match" });
    await client.close();
  });

  test("admitted and refused calls rewrite episode.json off the call's path, with the counters, soon after", async () => {
    const { a, client } = await connectedEpisode();
    // A synchronous rewrite (write, rename over the file) costs ~5 ms on ext4 and blocks every exchange in flight.
    let synchronousRewrites = 0;
    const describe = a.records.describe.bind(a.records);
    a.records.describe = (episode) => {
      synchronousRewrites += 1;
      describe(episode);
    };
    deliverBatch(a, [{ id: "call_obs", tool: "observe", args: {} }]);
    expect((await client.callTool({ name: "observe", arguments: {} })).isError).toBeFalsy();
    expect((await client.callTool({ name: "observe", arguments: {} })).isError).toBe(true);
    expect(synchronousRewrites).toBe(0);
    const onDisk = () =>
      JSON.parse(readFileSync(join(a.records.dir, "episode.json"), "utf8")) as {
        counters: Record<string, number>;
      };
    for (let i = 0; i < 100 && onDisk().counters.tool_calls_refused !== 1; i++) await Bun.sleep(20);
    expect(onDisk().counters).toMatchObject({ tool_calls_admitted: 1, tool_calls_refused: 1 });
    await client.close();
  });

  test("observe → record ×2 (one batch, no identity) → third refused → finish makes the episode finished", async () => {
    const { a, client, executors } = await connectedEpisode();

    deliverBatch(a, [{ id: "call_obs", tool: "observe", args: {} }]);
    const observed = await client.callTool({ name: "observe", arguments: {} });
    expect(observed.isError).toBeFalsy();
    const nonce = /nonce[\s:=]+"?([A-Za-z0-9_-]+)/.exec(textOf(observed))?.[1];
    expect(nonce).toBe("n0nce42");
    const image = (observed.content as { type: string; mimeType?: string; data?: string }[]).find(
      (p) => p.type === "image",
    );
    expect(image?.mimeType).toBe("image/png");
    expect(
      Buffer.from(image?.data ?? "", "base64")
        .subarray(1, 4)
        .toString(),
    ).toBe("PNG");

    deliverBatch(a, [
      { id: "call_r1", tool: "record", args: { nonce } },
      { id: "call_r2", tool: "record", args: { nonce } },
    ]);
    const [r1, r2] = await Promise.all([
      client.callTool({ name: "record", arguments: { nonce } }),
      client.callTool({ name: "record", arguments: { nonce } }),
    ]);
    expect([r1?.isError, r2?.isError]).toEqual([undefined, undefined]);
    const third = await client.callTool({ name: "record", arguments: { nonce } });
    expect(third.isError).toBe(true);
    expect(textOf(third)).toContain("refused");
    expect(executors[0]?.jobs().map((j) => j.callId)).toEqual(["call_obs", "call_r1", "call_r2"]);

    const colour = executors[0]?.currentColour();
    deliverBatch(a, [{ id: "call_fin", tool: "finish", args: { answer: colour } }]);
    const finished = await client.callTool({ name: "finish", arguments: { answer: colour } });
    expect(finished.isError).toBeFalsy();
    expect(a.state).toBe("finished");
    expect(a.result).toMatchObject({ submitted: true, correct: true });
    expect(a.counters).toMatchObject({ tool_calls_admitted: 4, tool_calls_refused: 1 });
    const claims = readJournal(a).filter((e) => e.type === "claimed");
    expect(claims.map((e) => e.callId)).toEqual(["call_obs", "call_r1", "call_r2", "call_fin"]);
    await client.close();
  });

  test("identity from _meta (Claude Code, Codex) and the _callID argument (OpenCode), stripped before schema validation", async () => {
    const { a, client, executors } = await connectedEpisode();
    deliverBatch(a, [{ id: "call_o", tool: "observe", args: {} }]);
    await client.callTool({ name: "observe", arguments: {} });
    deliverBatch(a, [
      { id: "toolu_1", tool: "record", args: { nonce: "n0nce42" } },
      { id: "call_codex", tool: "record", args: { nonce: "n0nce42" } },
      { id: "call_oc", tool: "record", args: { nonce: "n0nce42" } },
    ]);
    // Called out of order: identity decides which call each one is, batch order decides when it runs.
    const results = await Promise.all([
      client.callTool({ name: "record", arguments: { nonce: "n0nce42", _callID: "call_oc" } }),
      client.callTool({ name: "record", arguments: { nonce: "n0nce42" }, _meta: { callId: "call_codex" } }),
      client.callTool({
        name: "record",
        arguments: { nonce: "n0nce42" },
        _meta: { "claudecode/toolUseId": "toolu_1" },
      }),
    ]);
    expect(results.map((r) => r.isError)).toEqual([undefined, undefined, undefined]);
    expect(executors[0]?.jobs().map((j) => j.callId)).toEqual(["call_o", "toolu_1", "call_codex", "call_oc"]);
    const claims = readJournal(a).filter((e) => e.type === "claimed" && e.by === "call_id");
    expect(claims).toHaveLength(3);
    const replay = await client.callTool({
      name: "record",
      arguments: { nonce: "n0nce42" },
      _meta: { callId: "call_codex" },
    });
    expect(replay.isError).toBe(true);
    expect(textOf(replay)).toContain("refused");
    await client.close();
  });

  test("Gemini's wait_for_previous is stripped; schema-invalid arguments are refused and never executed", async () => {
    const { a, client, executors } = await connectedEpisode();
    deliverBatch(a, [{ id: "c1", tool: "observe", args: { wait_for_previous: true } }]);
    const ok = await client.callTool({ name: "observe", arguments: { wait_for_previous: true } });
    expect(ok.isError).toBeFalsy();
    deliverBatch(a, [{ id: "c2", tool: "record", args: { nonce: 7 } }]);
    const bad = await client.callTool({ name: "record", arguments: { nonce: 7 } });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toContain("input schema");
    expect(executors[0]?.jobs().map((j) => j.callId)).toEqual(["c1"]);
    expect(readJournal(a).at(-1)).toMatchObject({ type: "failed", callId: "c2" });
    expect(a.counters.tool_calls_refused).toBe(1);
    await client.close();
  });

  test("concurrent calls of one batch reach the executor one after another, each after the previous acknowledgement", async () => {
    const { episodes, mcpUrl } = await setup({
      config: { executor: { kind: "inert", ack_delay_ms: 80 } },
      createExecutor: undefined,
    });
    const a = episodes.create({ max_turns: 0 });
    const executor = a.executor as InertExecutor;
    const { client } = await connectMcp(mcpUrl(a), a.mcpToken);
    deliverBatch(a, [{ id: "c0", tool: "observe", args: {} }]);
    const observed = await client.callTool({ name: "observe", arguments: {} });
    const nonce = /nonce: (\S+)/.exec(textOf(observed))?.[1];
    deliverBatch(a, [
      { id: "c1", tool: "record", args: { nonce } },
      { id: "c2", tool: "record", args: { nonce } },
      { id: "c3", tool: "record", args: { nonce } },
    ]);
    await Promise.all([1, 2, 3].map(() => client.callTool({ name: "record", arguments: { nonce } })));
    const jobs = executor.jobs().slice(1);
    expect(jobs.map((j) => j.callId)).toEqual(["c1", "c2", "c3"]);
    for (let i = 1; i < jobs.length; i++) {
      expect(jobs[i]?.submitted_at ?? 0).toBeGreaterThanOrEqual(jobs[i - 1]?.acknowledged_at ?? Infinity);
    }
    expect((jobs[2]?.submitted_at ?? 0) - (jobs[0]?.submitted_at ?? 0)).toBeGreaterThanOrEqual(150);
    await client.close();
  });

  test("a callback that arrives while its batch is still being delivered waits for the delivery", async () => {
    const { a, client } = await connectedEpisode();
    const batch = deliverBatch(a, [{ id: "c1", tool: "observe", args: {} }], { deliver: false });
    setTimeout(() => a.ledger.delivered(batch), 100);
    const result = await client.callTool({ name: "observe", arguments: {} });
    expect(result.isError).toBeFalsy();
    await client.close();
  });

  test("a failed receipt is an error result that keeps its images; a background tool answers on acknowledgement", async () => {
    let release: (r: Receipt) => void = () => {};
    const executor: Executor = {
      submit: async (job) => ({ jobId: `job_${job.callId}` }),
      receipt: (jobId) =>
        jobId === "job_bg"
          ? new Promise((resolve) => {
              release = resolve;
            })
          : Promise.resolve({
              ok: false,
              content: [
                { type: "text", text: "gripper jammed" },
                { type: "image", data: "aW1n", mimeType: "image/png" },
              ],
            }),
    };
    const { episodes, mcpUrl } = await setup({ createExecutor: () => executor });
    const manifest = plainManifest([
      { name: "grasp" },
      { name: "move", mode: "background" },
      { name: "finish" },
    ]);
    const a = episodes.create({ max_turns: 0, manifest });
    const { client } = await connectMcp(mcpUrl(a), a.mcpToken);
    deliverBatch(a, [{ id: "g", tool: "grasp", args: {} }]);
    const failed = await client.callTool({ name: "grasp", arguments: {} });
    expect(failed.isError).toBe(true);
    expect(failed.content).toEqual([
      { type: "text", text: "gripper jammed" },
      { type: "image", data: "aW1n", mimeType: "image/png" },
    ]);
    deliverBatch(a, [{ id: "bg", tool: "move", args: {} }]);
    const accepted = await client.callTool({ name: "move", arguments: {} });
    expect(textOf(accepted)).toContain("job_bg");
    expect(readJournal(a).at(-1)).toMatchObject({ type: "acknowledged", callId: "bg", jobId: "job_bg" });
    release({ ok: true, content: [{ type: "text", text: "arrived" }], data: { at: "shelf" } });
    await Bun.sleep(20);
    expect(readJournal(a).at(-1)).toMatchObject({
      type: "receipt",
      callId: "bg",
      result: { ok: true, data: { at: "shelf" } },
    });
    await client.close();
  });
});
