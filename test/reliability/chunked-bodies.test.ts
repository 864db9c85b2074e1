/**
 * Request bodies sent with `transfer-encoding: chunked` (no content-length), against
 * the compiled binary over raw sockets: they are held to the same two bounds as a
 * sized body while they arrive. A body trickled in is refused at the body deadline
 * (server.body_timeout_seconds) with the same final 400; a body over
 * body_limit_bytes is refused in the client's envelope and recorded as soon as it
 * passes the limit, before the client has finished sending it; a sized body over
 * the limit is refused from its head alone. A chunked request under the limit is
 * served as any other. Needs `make build` (dist/ura-sidecar).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import { type CannedUpstream, serveCannedUpstream } from "../support/canned-upstream.ts";
import { startHardenedSidecar, turnTools } from "../support/hardening-kit.ts";
import { ingressKits, protocols } from "../support/ingress-kit.ts";
import { chunkOf, connectRaw, type RawConnection } from "../support/raw-http.ts";
import type { LaunchInfo, SidecarProcess } from "../support/sidecar-process.ts";

setDefaultTimeout(60_000);

const bodyTimeoutSeconds = 3;
const bodyLimit = 300_000;

let upstream: CannedUpstream;
let sidecar: SidecarProcess;
beforeAll(async () => {
  upstream = serveCannedUpstream();
  sidecar = await startHardenedSidecar(upstream, {
    body_limit_bytes: bodyLimit,
    server: { body_timeout_seconds: bodyTimeoutSeconds, idle_timeout_seconds: 8, max_requests_in_flight: 64 },
  });
});
afterAll(async () => {
  await sidecar.stop();
  upstream.stop();
});

/** The head of a model request to `protocol`, its body framed by `framing`. */
function modelHead(
  episode: LaunchInfo,
  protocol: (typeof protocols)[number],
  framing: Record<string, string>,
): string {
  const kit = ingressKits[protocol];
  const url = new URL(`${sidecar.url}${kit.path(episode.id, "m", false)}`);
  const headers = { host: url.host, "content-type": "application/json", ...kit.headers(episode.ingress_key) };
  const lines = Object.entries({ ...headers, ...framing }).map(([name, value]) => `${name}: ${value}\r\n`);
  return `POST ${url.pathname}${url.search} HTTP/1.1\r\n${lines.join("")}\r\n`;
}

const chunked = { "transfer-encoding": "chunked" };
const turnBody = JSON.stringify({ model: "m", input: [{ role: "user", content: "go" }], tools: turnTools });

const auxiliaryOf = (episode: LaunchInfo) =>
  readJsonLines<Record<string, unknown>>(join(episode.records_dir, "auxiliary.jsonl")).entries;

/** The status and the JSON body of the answer on a raw connection. */
function answerOf(connection: RawConnection): { status: number; body: unknown } {
  const text = connection.received();
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const body = text.slice(text.indexOf("\r\n\r\n") + 4);
  return { status, body: body === "" ? undefined : JSON.parse(body) };
}

async function waitFor(condition: () => boolean, ms: number): Promise<void> {
  for (const until = Date.now() + ms; !condition() && Date.now() < until; ) await Bun.sleep(10);
}

test("a chunked body trickled in is refused at the body deadline, as a sized one is: final 400, connection closed, recorded", async () => {
  const episode = await sidecar.createEpisode();
  upstream.reset();
  const connection = await connectRaw(sidecar.url);
  connection.write(modelHead(episode, "responses", chunked) + chunkOf(turnBody.slice(0, 10)));
  // A chunk every 200 ms: far under the limit, and bytes arriving do not extend the deadline.
  const drip = setInterval(() => connection.isOpen() && connection.write(chunkOf(" ")), 200);
  try {
    const closedAfter = await Promise.race([connection.closed, Bun.sleep(20_000).then(() => -1)]);
    expect(closedAfter).toBeGreaterThanOrEqual(bodyTimeoutSeconds * 1000 - 50);
    expect(closedAfter).toBeLessThan(bodyTimeoutSeconds * 1000 + 2_000);
  } finally {
    clearInterval(drip);
    connection.end();
  }
  const answer = answerOf(connection);
  expect(answer.status).toBe(400);
  const error = (answer.body as { error: { type: string; param: string; message: string } }).error;
  expect(error).toMatchObject({ type: "invalid_request_error", param: "body" });
  expect(error.message.replaceAll("\u200b", "")).toContain(
    `within ${bodyTimeoutSeconds} s (server.body_timeout_seconds)`,
  );
  expect(auxiliaryOf(episode)).toMatchObject([{ operation: "body_timeout", status: 400 }]);
  expect(upstream.received).toHaveLength(0);
});

describe("a chunked body over body_limit_bytes", () => {
  for (const protocol of protocols) {
    test(`${protocol}: a final 400 in its envelope, recorded, while the client is still sending`, async () => {
      const episode = await sidecar.createEpisode();
      upstream.reset();
      const connection = await connectRaw(sidecar.url);
      connection.write(modelHead(episode, protocol, chunked) + chunkOf('{"padding":"'));
      // 32 KiB every 10 ms up to four times the limit; the last chunk (which ends the body) is never sent.
      const piece = chunkOf("x".repeat(32 * 1024));
      let sent = 0;
      let sentWhenAnswered: number | undefined;
      while (sent < 4 * bodyLimit && connection.isOpen()) {
        if (connection.received() !== "") {
          sentWhenAnswered = sent;
          break;
        }
        connection.write(piece);
        sent += 32 * 1024;
        await Bun.sleep(10);
      }
      await waitFor(() => connection.received().includes("}"), 2_000);
      sentWhenAnswered ??= sent;
      // Reading stopped at the limit: the sidecar closes the connection, well before the body deadline.
      const closedAfter = await Promise.race([connection.closed, Bun.sleep(2_000).then(() => -1)]);
      connection.end();
      console.log(
        `${protocol}: answered after ${sentWhenAnswered} bytes sent, closed after ${closedAfter} ms`,
      );
      expect(closedAfter).toBeGreaterThan(0);
      expect(closedAfter).toBeLessThan(bodyTimeoutSeconds * 1000);
      expect(sentWhenAnswered).toBeLessThan(4 * bodyLimit);

      const answer = answerOf(connection);
      const kit = ingressKits[protocol];
      const expected = kit.expected("request_too_large");
      expect(answer.status).toBe(expected.status);
      const read = kit.readError(answer.status, answer.body);
      expect(read.type).toBe(expected.type);
      expect(read.message).toBe(`request body over the limit of ${bodyLimit} bytes (body_limit_bytes)`);
      expect(auxiliaryOf(episode)).toMatchObject([
        { protocol, operation: "body_limit", status: 400, limit_bytes: bodyLimit, content_length: null },
      ]);
      expect(JSON.stringify(auxiliaryOf(episode))).not.toContain("xxxx");
      expect(upstream.received).toHaveLength(0);
    });
  }
});

test("a sized body over the limit is refused from its head, before any of it is sent", async () => {
  const episode = await sidecar.createEpisode();
  const connection = await connectRaw(sidecar.url);
  connection.write(modelHead(episode, "messages", { "content-length": String(10 * bodyLimit) }));
  await waitFor(() => connection.received().includes("}"), 2_000);
  connection.end();
  const answer = answerOf(connection);
  expect(answer.status).toBe(400);
  expect(ingressKits.messages.readError(400, answer.body).message).toContain("body_limit_bytes");
  expect(auxiliaryOf(episode)).toMatchObject([{ operation: "body_limit", content_length: 10 * bodyLimit }]);
});

test("a chunked request under the limit is answered 200", async () => {
  const episode = await sidecar.createEpisode();
  upstream.reset();
  const connection = await connectRaw(sidecar.url);
  connection.write(modelHead(episode, "responses", { ...chunked, connection: "close" }));
  for (let at = 0; at < turnBody.length; at += 64) {
    connection.write(chunkOf(turnBody.slice(at, at + 64)));
    await Bun.sleep(5);
  }
  connection.write(chunkOf(""));
  await Promise.race([connection.closed, Bun.sleep(10_000)]);
  expect(connection.received()).toStartWith("HTTP/1.1 200");
  expect(connection.received()).toContain("nothing more to do");
  expect(upstream.received).toHaveLength(1);
  expect(upstream.received[0]?.body).toMatchObject({ messages: [{ role: "user", content: "go" }] });
});
