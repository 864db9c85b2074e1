/**
 * In-process test kit for the MCP server (tests only): the real app and episode
 * store served by Bun.serve on a random loopback port, a real SDK client, and a
 * stand-in for a model exchange that registers and delivers a batch in the
 * episode's ledger exactly as run-exchange.ts does.
 */
import { afterEach } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type ConfigInput, configSchema } from "../../src/config/schema.ts";
import type { Episode } from "../../src/episodes/episode.ts";
import type { ExecutorFactory } from "../../src/executor/create-executor.ts";
import { loadCodecsOnFirstUse } from "../../src/images/codecs.ts";
import { manifestSchema } from "../../src/manifest/manifest-schema.ts";
import { composeApp } from "../../src/server/compose.ts";

export const testControlPassword = "test-control-password";

// Shared by the sidecars of a test process, and loaded only if one of them converts an image.
const codecs = loadCodecsOnFirstUse();

export async function startTestSidecar(
  options: { config?: ConfigInput; createExecutor?: ExecutorFactory } = {},
) {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-mcp-test-"));
  const config = configSchema.parse({
    data_dir: dataDir,
    body_limit_bytes: 16 * 1024 * 1024,
    ...options.config,
  });
  let server: ReturnType<typeof Bun.serve> | undefined;
  const { app, episodes, abortUpstream } = await composeApp({
    config,
    secrets: { upstreamApiKey: undefined, controlPassword: testControlPassword },
    version: "test",
    codecs,
    baseUrl: () => `http://127.0.0.1:${server?.port ?? 0}`,
    logLevel: "error",
    logWrite: () => {},
    ...(options.createExecutor ? { createExecutor: options.createExecutor } : {}),
  });
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) => app.fetch(req),
    idleTimeout: 0,
  });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    app,
    episodes,
    url,
    mcpUrl: (episode: Episode) => `${url}/e/${episode.id}/mcp`,
    stop: () => {
      abortUpstream("test over");
      server?.stop(true);
    },
  };
}

/**
 * Starts test sidecars for the tests of one file, each stopped after the test that
 * started it. Call once, at the top level of the test file.
 */
export function testSidecarsPerTest(): typeof startTestSidecar {
  let stops: (() => void)[] = [];
  afterEach(() => {
    for (const stop of stops) stop();
    stops = [];
  });
  return async (options) => {
    const sidecar = await startTestSidecar(options);
    stops.push(sidecar.stop);
    return sidecar;
  };
}

export async function connectMcp(
  url: string,
  token: string | undefined,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "ura-test", version: "0.0.0" });
  await client.connect(transport);
  return { client, transport };
}

export type TestCall = { id: string; tool: string; args: Record<string, unknown>; modelName?: string };

let batchSeq = 0;

/** What a model exchange does around its send: register the batch, then mark it delivered (unless told not to). */
export function deliverBatch(
  episode: Episode,
  calls: TestCall[],
  options: { deliver?: boolean } = {},
): string {
  batchSeq += 1;
  const batchId = `test_batch_${batchSeq}`;
  episode.ledger.register({
    batchId,
    calls: calls.map((c) => ({
      id: c.id,
      modelName: c.modelName ?? `mcp__ura__${c.tool}`,
      tool: c.tool,
      args: c.args,
    })),
  });
  if (options.deliver ?? true) episode.ledger.delivered(batchId);
  return batchId;
}

/** The episode's ledger journal as written to its records directory. */
export function readJournal(episode: Episode): Record<string, unknown>[] {
  return readFileSync(join(episode.records.dir, "ledger.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

export function textOf(result: unknown): string {
  const parts = ((result as { content?: unknown }).content ?? []) as { type: string; text?: string }[];
  return parts.map((p) => (p.type === "text" ? (p.text ?? "") : `[${p.type}]`)).join("\n");
}

/** A raw MCP `initialize`, for tests that look at the HTTP exchange rather than use a client. */
export const rawInitialize = {
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
};

/** POSTs a JSON-RPC message to an MCP endpoint as a Streamable HTTP client would. */
export function postMcp(url: string, headers: Record<string, string>, body: unknown = rawInitialize) {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

/** A manifest of argument-free tools (description and route = name), the last one finishing the episode. */
export function plainManifest(tools: { name: string; mode?: "foreground" | "background" }[]) {
  return manifestSchema.parse({
    finish_tool: tools.at(-1)?.name,
    tools: tools.map((t) => ({ ...t, description: t.name, input_schema: { type: "object" }, route: t.name })),
  });
}

/** A manifest whose `move` tool (numeric x, y) has the given approval policy and rate, and a finish tool. */
export function approvalManifest(approval: unknown = "always", rate?: unknown) {
  return {
    finish_tool: "finish",
    tools: [
      {
        name: "move",
        description: "move the arm",
        input_schema: { type: "object", properties: { x: { type: "number" } } },
        route: "move",
        approval,
        ...(rate === undefined ? {} : { rate }),
      },
      { name: "finish", description: "finish", input_schema: { type: "object" }, route: "finish" },
    ],
  };
}
