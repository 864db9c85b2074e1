/**
 * The request limits over a real Bun.serve (they act only when Bun serves the app),
 * with a body receiver of each form on its own route: routes still read the body (hono's reader and the raw Request, as the MCP
 * transport does), the in-flight limit refuses through `refuse` before a body is
 * read, a pausing stream is sent with `connection: close`, a body over the limit
 * is refused while it arrives (chunked) or from its length (sized), and an app
 * driven with app.request() has the body limit but no timer.
 */
import { afterEach, expect, test } from "bun:test";
import { Hono } from "hono";
import type { BodyEnv } from "../body/body-variables.ts";
import { receiveBodies } from "../body/receive-bodies.ts";
import { receivedBody } from "../body/received-body.ts";
import { wholeText } from "../body/split-text.ts";
import { createLogger } from "../lib/logger.ts";
import { admitRequests, answerTimers, type RequestLimitsDeps } from "./request-timeouts.ts";

const refusals: { path: string; kind: string; operation: unknown }[] = [];
const bodyLimitBytes = 4 * 1024 * 1024;
const deps: RequestLimitsDeps = {
  limits: { body_timeout_seconds: 5, idle_timeout_seconds: 8, max_requests_in_flight: 2 },
  logger: createLogger({ level: "error", redact: (line) => line, write: () => {} }),
  clock: Date.now,
  refuse: (request, error, entry) => {
    refusals.push({ path: new URL(request.url).pathname, kind: error.kind, operation: entry.operation });
    return Response.json({ refused: error.message }, { status: error.status });
  },
};

function limitedApp(bodyArriving?: (bodyBytes: number) => void, bodyReceived?: (bytes: number) => void) {
  const app = new Hono<BodyEnv>();
  app.use("*", admitRequests(deps));
  app.use(
    "*",
    answerTimers(deps.limits, (path) => path === "/events"),
  );
  const receiver = {
    ...deps,
    bodyLimitBytes,
    refuseOversized: (request: Request) => {
      refusals.push({ path: new URL(request.url).pathname, kind: "too_large", operation: "body_limit" });
      return new Response("too large", { status: 413 });
    },
    ...(bodyArriving ? { bodyArriving } : {}),
    ...(bodyReceived ? { bodyReceived } : {}),
  };
  app.use("/text", receiveBodies(receiver, "text"));
  app.use("/raw", receiveBodies(receiver, "raw"));
  app.use("/split", receiveBodies(receiver, "split"));
  const { promise: release, resolve } = Promise.withResolvers<void>();
  const holding = { count: 0 };
  app.post("/text", async (c) => c.text(`text:${await c.req.text()}`));
  app.post("/raw", async (c) => c.json(await c.req.raw.json()));
  app.post("/split", async (c) => {
    const body = await receivedBody(c);
    return c.json({ strings: body.strings.length, whole: wholeText(body) });
  });
  app.get("/hold", async (c) => {
    holding.count += 1;
    await release;
    return c.text("held");
  });
  app.get("/events", (c) => c.body("data: 1\n\n", 200, { "content-type": "text/event-stream" }));
  return { app, release: resolve, holding };
}

let stop: (() => void) | undefined;
afterEach(() => {
  stop?.();
  refusals.length = 0;
});

function serve(app: Hono<BodyEnv>) {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req, srv) => app.fetch(req, { server: srv }),
  });
  stop = () => server.stop(true);
  return `http://127.0.0.1:${server.port}`;
}

test("routes read the received body through hono and through the raw request", async () => {
  const url = serve(limitedApp().app);
  const text = await fetch(`${url}/text`, { method: "POST", body: "hello" });
  expect(await text.text()).toBe("text:hello");
  const raw = await fetch(`${url}/raw`, { method: "POST", body: JSON.stringify({ a: [1, 2] }) });
  expect(await raw.json()).toEqual({ a: [1, 2] });
});

test("a model route's body arrives split, its long base64 strings apart, and joins back exactly", async () => {
  const url = serve(limitedApp().app);
  const frame = Buffer.alloc(700_000, 7).toBase64();
  const body = JSON.stringify({ note: 'é " [', images: [frame, `data:image/png;base64,${frame}`], n: 1 });
  const answer = await fetch(`${url}/split`, { method: "POST", body });
  expect(await answer.json()).toEqual({ strings: 2, whole: body });
});

test("beyond max_requests_in_flight the request is refused before its route runs", async () => {
  const { app, release, holding } = limitedApp();
  const url = serve(app);
  const held = [fetch(`${url}/hold`), fetch(`${url}/hold`)];
  for (let waited = 0; holding.count < 2 && waited < 5_000; waited += 10) await Bun.sleep(10);
  const refused = await fetch(`${url}/text`, { method: "POST", body: "late" });
  expect(refused.status).toBe(503);
  expect(refused.headers.get("retry-after")).toBe("1");
  expect(refusals).toEqual([{ path: "/text", kind: "unavailable", operation: "request_limit" }]);
  release();
  expect(await Promise.all(held.map(async (h) => (await h).text()))).toEqual(["held", "held"]);
  expect(await (await fetch(`${url}/text`, { method: "POST", body: "again" })).text()).toBe("text:again");
});

test("a pausing event stream ends its connection; other answers keep it", async () => {
  const url = serve(limitedApp().app);
  expect((await fetch(`${url}/events`)).headers.get("connection")).toBe("close");
  expect((await fetch(`${url}/text`, { method: "POST", body: "x" })).headers.get("connection")).not.toBe(
    "close",
  );
});

/** A body sent in 64 KiB chunks with no content-length (fetch sends it chunked); `sent` counts what was pulled. */
function chunkedBody(bytes: number) {
  const progress = { sent: 0 };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (progress.sent >= bytes) return controller.close();
      await Bun.sleep(1);
      controller.enqueue(new Uint8Array(64 * 1024).fill(0x61));
      progress.sent += 64 * 1024;
    },
  });
  return { body, progress };
}

test("a chunked body over the limit is refused as it passes it, on every kind of route; one under it is read", async () => {
  const url = serve(limitedApp().app);
  for (const path of ["/text", "/raw", "/split"]) {
    const { body, progress } = chunkedBody(100 * bodyLimitBytes);
    const res = await fetch(`${url}${path}`, { method: "POST", body, duplex: "half" } as RequestInit);
    expect(res.status).toBe(413);
    expect(res.headers.get("connection")).toBe("close");
    expect(progress.sent).toBeLessThan(10 * bodyLimitBytes);
  }
  expect(refusals.map((r) => r.path)).toEqual(["/text", "/raw", "/split"]);
  const { body } = chunkedBody(bodyLimitBytes);
  const fits = await fetch(`${url}/text`, { method: "POST", body, duplex: "half" } as RequestInit);
  expect(await fits.text()).toBe(`text:${"a".repeat(bodyLimitBytes)}`);
});

test("a sized body over the limit is refused from its length", async () => {
  const url = serve(limitedApp().app);
  const res = await fetch(`${url}/split`, { method: "POST", body: "a".repeat(bodyLimitBytes + 1) });
  expect(res.status).toBe(413);
  expect(refusals).toEqual([{ path: "/split", kind: "too_large", operation: "body_limit" }]);
});

test("driven with app.request() (no Bun server) only the body limit holds", async () => {
  const { app } = limitedApp();
  const answers = await Promise.all(
    Array.from({ length: 4 }, (_, i) => app.request("/text", { method: "POST", body: `n${i}` })),
  );
  expect(await Promise.all(answers.map((a) => a.text()))).toEqual([
    "text:n0",
    "text:n1",
    "text:n2",
    "text:n3",
  ]);
  expect(refusals).toEqual([]);
  const { body } = chunkedBody(2 * bodyLimitBytes);
  const res = await app.request("/split", { method: "POST", body, duplex: "half" } as RequestInit);
  expect(res.status).toBe(413);
});

test("bodyArriving is told a sized body's length before it is read, a chunked one's once it has arrived", async () => {
  const { body, progress } = chunkedBody(1024 * 1024);
  const told: { bytes: number; sentBefore: number }[] = [];
  const { app } = limitedApp((bytes) => told.push({ bytes, sentBefore: progress.sent }));
  const sized = await app.request("/split", {
    method: "POST",
    headers: { "content-length": "310" },
    body: JSON.stringify({ a: "b".repeat(300) }),
  });
  expect(sized.status).toBe(200);
  const chunked = await app.request("/text", { method: "POST", body, duplex: "half" } as RequestInit);
  expect(chunked.status).toBe(200);
  expect(told).toEqual([
    { bytes: 310, sentBefore: 0 },
    { bytes: 1024 * 1024, sentBefore: 1024 * 1024 },
  ]);
});

test("bodyReceived is told each piece of a large body as it arrives, split and sized or text and chunked", async () => {
  const pieces: number[] = [];
  const { app } = limitedApp(undefined, (bytes) => pieces.push(bytes));
  const json = JSON.stringify({ a: "b".repeat(2 * 1024 * 1024) });
  const sized = await app.request("/split", {
    method: "POST",
    headers: { "content-length": String(json.length) },
    body: json,
  });
  expect(sized.status).toBe(200);
  expect(pieces.reduce((sum, bytes) => sum + bytes, 0)).toBe(json.length);
  pieces.length = 0;
  const { body } = chunkedBody(1024 * 1024);
  const chunked = await app.request("/text", { method: "POST", body, duplex: "half" } as RequestInit);
  expect(chunked.status).toBe(200);
  expect(pieces.length).toBeGreaterThan(1);
  expect(pieces.reduce((sum, bytes) => sum + bytes, 0)).toBe(1024 * 1024);
});
