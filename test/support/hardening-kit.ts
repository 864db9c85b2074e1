/**
 * What the hardening tests share (tests only): the compiled binary started with a
 * config file against a canned upstream (test/support/canned-upstream.ts), a
 * Responses model turn as OpenCode or Codex sends it, and MCP callbacks with the
 * real SDK client.
 */
import { afterAll, beforeAll } from "bun:test";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import { type CannedUpstream, serveCannedUpstream } from "./canned-upstream.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "./sidecar-process.ts";

export async function startHardenedSidecar(
  upstream: CannedUpstream,
  config: Record<string, unknown> = {},
  options: { dataDir?: string; env?: Record<string, string> } = {},
): Promise<SidecarProcess> {
  return startSidecarProcess({
    upstreamUrl: upstream.url,
    config: { log_level: "warn", upstream: { retry: { max_attempts: 1 } }, ...config },
    ...options,
  });
}

/** A canned upstream for the whole test file: started at once, stopped after the file's last test. */
export function cannedUpstreamForFile(): CannedUpstream {
  const upstream = serveCannedUpstream();
  afterAll(() => upstream.stop());
  return upstream;
}

/**
 * A hardened sidecar for the enclosing describe block (or the file): started before
 * its first test, stopped after its last. The returned object is filled in when the
 * sidecar has started, so the tests use it as the sidecar itself.
 */
export function hardenedSidecarFor(
  upstream: CannedUpstream,
  config: Record<string, unknown> = {},
  options: { dataDir?: string; env?: Record<string, string> } = {},
): SidecarProcess {
  const sidecar = {} as SidecarProcess;
  beforeAll(async () => {
    Object.assign(sidecar, await startHardenedSidecar(upstream, config, options));
  });
  afterAll(async () => {
    await sidecar.stop?.();
  });
  return sidecar;
}

export const turnTools = ["observe", "record", "finish"].map((tool) => ({
  type: "function",
  name: `ura_${tool}`,
  parameters: {
    type: "object",
    properties: tool === "observe" ? {} : { [tool === "record" ? "nonce" : "answer"]: { type: "string" } },
  },
}));

export type FunctionCall = { type: "function_call"; call_id: string; name: string; arguments: string };

/** One Responses model exchange; `init` adds e.g. an abort signal. */
export function responsesTurn(
  episode: LaunchInfo,
  init: RequestInit = {},
  options: { stream?: boolean; prompt?: string } = {},
): Promise<Response> {
  return fetch(`${episode.urls.responses}/responses`, {
    // Not a pooled connection the sidecar may be closing for idleness at that moment (ECONNRESET).
    keepalive: false,
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingress_key}` },
    body: JSON.stringify({
      model: "m",
      input: [{ role: "user", content: options.prompt ?? "go" }],
      tools: turnTools,
      stream: options.stream ?? false,
    }),
    ...init,
  });
}

export async function deliveredCalls(res: Response): Promise<FunctionCall[]> {
  if (res.status !== 200) throw new Error(`model turn: HTTP ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { output: { type: string }[] };
  return body.output.filter((o) => o.type === "function_call") as FunctionCall[];
}

export async function mcpClient(episode: LaunchInfo): Promise<Client> {
  const client = new Client({ name: "ura-hardening-test", version: "0.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(episode.urls.mcp), {
      requestInit: { headers: { authorization: `Bearer ${episode.mcp_token}` } },
    }),
  );
  return client;
}

/** A callback as Codex sends it (call id in `_meta`), or without any id as Gemini CLI does. */
export function callBack(client: Client, tool: string, args: Record<string, unknown>, callId?: string) {
  return client.callTool({
    name: tool,
    arguments: args,
    ...(callId === undefined ? {} : { _meta: { callId } }),
  });
}

export const textOf = (result: unknown) =>
  ((result as { content?: { type: string; text?: string }[] }).content ?? [])
    .map((p) => p.text ?? `[${p.type}]`)
    .join("\n");

export function ledgerOf(episode: LaunchInfo) {
  return readJsonLines<Record<string, unknown> & { type: string }>(join(episode.records_dir, "ledger.jsonl"))
    .entries;
}

export function exchangesOf(episode: LaunchInfo) {
  return readJsonLines<Record<string, unknown> & { stage: string }>(
    join(episode.records_dir, "exchanges.jsonl"),
  ).entries;
}

/**
 * A client that sends a Responses request over a raw socket and stops reading as
 * soon as the first response bytes arrive (node:net `pause`, so the kernel's
 * buffers fill and the sidecar's delivery cannot finish). Resolves with the
 * first bytes; `close` ends the socket.
 */
export async function stallAfterFirstBytes(
  episode: LaunchInfo,
  stream = false,
): Promise<{ first: string; close: () => void }> {
  const { connect } = await import("node:net");
  const url = new URL(`${episode.urls.responses}/responses`);
  const body = JSON.stringify({
    model: "m",
    input: [{ role: "user", content: "go" }],
    tools: turnTools,
    stream,
  });
  const socket = connect(Number(url.port), url.hostname);
  const { promise, resolve, reject } = Promise.withResolvers<string>();
  socket.once("data", (data) => {
    socket.pause();
    resolve(data.toString("latin1"));
  });
  socket.once("error", reject);
  socket.write(
    `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
      `authorization: Bearer ${episode.ingress_key}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  const first = await promise;
  return { first, close: () => socket.destroy() };
}

/**
 * A client that sends a Responses request over a raw socket and closes it after
 * `closeAfterMs`, having read nothing: resolves with the bytes it had received
 * by then (0 when the answer had not arrived).
 */
export async function leaveAfter(
  episode: LaunchInfo,
  closeAfterMs: number,
): Promise<{ received: number; closedAt: number }> {
  const { connect } = await import("node:net");
  const url = new URL(`${episode.urls.responses}/responses`);
  const body = JSON.stringify({ model: "m", input: [{ role: "user", content: "go" }], tools: turnTools });
  const socket = connect(Number(url.port), url.hostname);
  let received = 0;
  socket.on("data", (data) => {
    received += data.length;
  });
  socket.on("error", () => {});
  socket.write(
    `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
      `authorization: Bearer ${episode.ingress_key}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await Bun.sleep(closeAfterMs);
  // Let bytes the kernel already holds reach the data handler before counting: a close with
  // unread bytes in the socket buffer is a delivered answer (handed to the kernel), not a refusal.
  await new Promise((resolve) => setImmediate(resolve));
  await Bun.sleep(1);
  const got = received;
  const closedAt = Date.now();
  socket.destroy();
  return { received: got, closedAt };
}
