/**
 * Slow and idle clients against the compiled binary, over raw sockets: a request
 * head trickled in byte by byte and a body that never finishes are cut (the body
 * with a final error in the route's envelope, recorded), an idle kept-alive
 * connection is closed, and beyond `server.max_requests_in_flight` a request is
 * refused with a retryable 503 in its envelope while the probes still answer.
 * What must never be cut: a long upstream wait and a robot call that outlasts the
 * idle timeout. Short timeouts in the config stand in for the defaults.
 * Needs `make build` (dist/ura-sidecar).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import { type CannedUpstream, serveCannedUpstream } from "../support/canned-upstream.ts";
import {
  mcpClient,
  responsesTurn,
  startHardenedSidecar,
  textOf,
  turnTools,
} from "../support/hardening-kit.ts";
import { connectRaw, type RawConnection } from "../support/raw-http.ts";
import type { LaunchInfo, SidecarProcess } from "../support/sidecar-process.ts";

setDefaultTimeout(60_000);

const bodyTimeoutSeconds = 3;
/** Bun counts idle time in 4 s steps: a connection is closed 4–8 s after its last byte. */
const idleTimeoutSeconds = 8;
const maxRequestsInFlight = 4;
/** Longer than every timer above together: what waiting on the upstream or the robot may take. */
const longWaitMs = 14_000;

let upstream: CannedUpstream;
let sidecar: SidecarProcess;
beforeAll(async () => {
  upstream = serveCannedUpstream();
  sidecar = await startHardenedSidecar(upstream, {
    server: {
      body_timeout_seconds: bodyTimeoutSeconds,
      idle_timeout_seconds: idleTimeoutSeconds,
      max_requests_in_flight: maxRequestsInFlight,
    },
    upstream: { retry: { max_attempts: 1 }, idle_timeout_ms: 4 * longWaitMs },
    executor: { kind: "inert", receipt_delay_ms: longWaitMs },
  });
});
afterAll(async () => {
  await sidecar.stop();
  upstream.stop();
});

function responsesHead(episode: LaunchInfo, contentLength: number): string {
  const url = new URL(`${episode.urls.responses}/responses`);
  return (
    `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
    `authorization: Bearer ${episode.ingress_key}\r\ncontent-length: ${contentLength}\r\n\r\n`
  );
}

const turnBody = JSON.stringify({ model: "m", input: [{ role: "user", content: "go" }], tools: turnTools });

/** A request whose head is complete and whose body stops after its first bytes. */
async function stalledBody(episode: LaunchInfo): Promise<RawConnection> {
  const connection = await connectRaw(sidecar.url);
  connection.write(responsesHead(episode, turnBody.length) + turnBody.slice(0, 10));
  return connection;
}

const auxiliaryOf = (episode: LaunchInfo) =>
  readJsonLines<Record<string, unknown>>(join(episode.records_dir, "auxiliary.jsonl")).entries;

test("a request head trickled in byte by byte is cut by the runtime's header timeout", async () => {
  const connection = await connectRaw(sidecar.url);
  const head = `GET /health/live HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ${"a".repeat(200)}`;
  let sent = 0;
  const drip = setInterval(() => {
    if (connection.isOpen() && sent < head.length) connection.write(head[sent++] ?? "");
  }, 250);
  try {
    const closedAfter = await connection.closed;
    expect(closedAfter).toBeLessThan(20_000);
    expect(sent).toBeLessThan(head.length); // still sending when it was cut
    expect(connection.received()).toBe("");
  } finally {
    clearInterval(drip);
  }
});

test("a body that never finishes: a final 400 naming the body timeout, the connection closed, the refusal recorded", async () => {
  const episode = await sidecar.createEpisode();
  const connection = await stalledBody(episode);
  const drip = setInterval(() => connection.isOpen() && connection.write(" "), 200); // bytes do not extend it
  try {
    const closedAfter = await connection.closed;
    expect(closedAfter).toBeGreaterThanOrEqual(bodyTimeoutSeconds * 1000 - 50);
    expect(closedAfter).toBeLessThan(bodyTimeoutSeconds * 1000 + 5_000);
  } finally {
    clearInterval(drip);
  }
  const answer = connection.received();
  expect(answer).toStartWith("HTTP/1.1 400");
  const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as {
    error: { type: string; param: string; message: string };
  };
  expect(body.error).toMatchObject({ type: "invalid_request_error", param: "body" });
  expect(body.error.message.replaceAll("\u200b", "")).toContain(
    `within ${bodyTimeoutSeconds} s (server.body_timeout_seconds)`,
  );
  expect(auxiliaryOf(episode)).toMatchObject([{ operation: "body_timeout", status: 400 }]);
  expect(upstream.received).toHaveLength(0);
});

test("an idle kept-alive connection is closed after idle_timeout_seconds", async () => {
  const episode = await sidecar.createEpisode();
  upstream.reset();
  const connection = await connectRaw(sidecar.url);
  connection.write(responsesHead(episode, turnBody.length) + turnBody);
  const started = Date.now();
  const closedAfter = await connection.closed;
  expect(connection.received()).toStartWith("HTTP/1.1 200");
  expect(connection.received()).toContain("nothing more to do");
  expect(Date.now() - started).toBeGreaterThanOrEqual((idleTimeoutSeconds - 4) * 1000 - 500);
  expect(closedAfter).toBeLessThan(idleTimeoutSeconds * 1000 + 5_000);
});

test("a long upstream wait is not cut: the answer arrives after every timer would have fired", async () => {
  const episode = await sidecar.createEpisode();
  upstream.reset();
  const slow = {
    kind: "slow" as const,
    ms: longWaitMs,
    reply: { kind: "text" as const, text: "worth the wait" },
  };
  upstream.reply(slow);
  upstream.reply(slow);
  const started = Date.now();
  const answers = await Promise.all(
    [false, true].map(async (stream) => {
      const res = await responsesTurn(episode, {}, { stream });
      return { status: res.status, text: await res.text() };
    }),
  );
  for (const answer of answers) {
    expect(answer.status).toBe(200);
    expect(answer.text).toContain("worth the wait");
  }
  expect(Date.now() - started).toBeGreaterThanOrEqual(longWaitMs - 100);
}, 90_000);

test("a robot call that outlasts the idle timeout is not cut: its result arrives over the MCP stream", async () => {
  const episode = await sidecar.createEpisode();
  upstream.reset();
  upstream.reply({ kind: "calls", calls: [{ id: "call_slow_robot", name: "ura_observe", arguments: "{}" }] });
  const turn = await responsesTurn(episode);
  expect(turn.status).toBe(200);
  await turn.text();
  const client = await mcpClient(episode);
  try {
    const started = Date.now();
    const result = await client.callTool({ name: "observe", arguments: {} }, undefined, {
      timeout: 4 * longWaitMs,
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(longWaitMs - 100);
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toContain("nonce");
  } finally {
    await client.close();
  }
}, 90_000);

test("beyond max_requests_in_flight: a retryable 503 in the route's envelope, recorded; probes still answer", async () => {
  const episode = await sidecar.createEpisode();
  upstream.reset();
  const stalled = await Promise.all(Array.from({ length: maxRequestsInFlight }, () => stalledBody(episode)));
  // The stalled requests count once the sidecar has read their heads: wait for the control API to say so.
  const atLimit = async () => (await sidecar.control("/episodes")).status === 503;
  for (let waited = 0; !(await atLimit()) && waited < 1_500; waited += 50) await Bun.sleep(50);
  const refused = await responsesTurn(episode);
  expect(refused.status).toBe(503);
  expect(refused.headers.get("retry-after")).toBe("1");
  expect(await refused.json()).toMatchObject({
    error: {
      type: "server_error",
      code: "unavailable",
      message: expect.stringContaining("server.max_requests_in_flight"),
    },
  });
  const gemini = await fetch(`${sidecar.url}/e/${episode.id}/gemini/v1beta/models/m:generateContent`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-goog-api-key": episode.ingress_key },
    body: "{}",
  });
  expect(gemini.status).toBe(503);
  expect(await gemini.json()).toMatchObject({ error: { code: 503, status: "UNAVAILABLE" } });
  const mcp = await fetch(episode.urls.mcp, { method: "POST", body: "{}" });
  expect(mcp.status).toBe(503);
  expect(await mcp.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } });
  expect((await fetch(`${sidecar.url}/health/live`)).status).toBe(200);
  expect(auxiliaryOf(episode).filter((e) => e.operation === "request_limit")).toHaveLength(2);
  expect(upstream.received).toHaveLength(0);

  // Once the stalled bodies are cut, requests are served again.
  await Promise.all(stalled.map((s) => s.closed));
  const served = await responsesTurn(episode);
  expect(served.status).toBe(200);
  await served.text();
});
