import { afterEach, describe, expect, test } from "bun:test";
import { configSchema } from "../config/schema.ts";
import { createExecutorFactory } from "./create-executor.ts";
import type { ExecutorJob } from "./executor.ts";
import { createHttpExecutor, type HttpExecutorOptions } from "./http-executor.ts";

const job: ExecutorJob = {
  callId: "call_1",
  episodeId: "ep_x",
  tool: "record",
  route: "record",
  mode: "foreground",
  arguments: { nonce: "n" },
};

/** A controller following docs/executor-api.md, with knobs for failures. */
function startController(
  options: {
    failFirstSubmits?: number;
    pendingPolls?: number;
    refuse?: boolean;
    failReceipts?: boolean;
  } = {},
) {
  const jobs = new Map<string, { id: string; body: unknown; polls: number }>();
  const seen: { method: string; path: string; key: string | null; body: unknown }[] = [];
  let submitFailures = options.failFirstSubmits ?? 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const body = req.method === "POST" ? await req.json() : undefined;
      seen.push({
        method: req.method,
        path: url.pathname + url.search,
        key: req.headers.get("idempotency-key"),
        body,
      });
      if (req.method === "POST" && url.pathname === "/jobs") {
        if (options.refuse) return new Response("no such route", { status: 422 });
        if (submitFailures > 0) {
          submitFailures -= 1;
          return new Response("busy", { status: 503 });
        }
        const key = req.headers.get("idempotency-key") ?? "";
        const known = jobs.get(key);
        if (known) return Response.json({ job_id: known.id }, { status: 200 });
        jobs.set(key, { id: `J-${jobs.size + 1}`, body, polls: 0 });
        return Response.json({ job_id: `J-${jobs.size}` }, { status: 202 });
      }
      const match = /^\/jobs\/([^/]+)\/receipt$/.exec(url.pathname);
      const entry = [...jobs.values()].find((j) => j.id === match?.[1]);
      if (!entry) return new Response("unknown job", { status: 404 });
      if (options.failReceipts) return new Response("busy", { status: 503 });
      entry.polls += 1;
      if (entry.polls <= (options.pendingPolls ?? 0)) return new Response(null, { status: 204 });
      return Response.json({
        ok: true,
        content: [{ type: "text", text: "done" }],
        data: { polls: entry.polls },
      });
    },
  });
  stops.push(() => server.stop(true));
  return { url: `http://127.0.0.1:${server.port}`, seen, jobs };
}

let stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops) stop();
  stops = [];
});

const client = (url: string, options: Partial<HttpExecutorOptions> = {}) =>
  createHttpExecutor({
    url,
    timeoutMs: 2_000,
    receiptTimeoutMs: 2_000,
    pollWaitMs: 0,
    submitAttempts: 3,
    receiptAttempts: 5,
    retryDelayMs: 5,
    ...options,
  });

describe("createHttpExecutor", () => {
  test("submits with the job key (episode id + call id) as idempotency key, then polls the receipt", async () => {
    const controller = startController({ pendingPolls: 2 });
    const executor = client(controller.url);
    const ack = await executor.submit(job);
    expect(ack).toEqual({ jobId: "J-1" });
    expect(controller.seen[0]).toEqual({
      method: "POST",
      path: "/jobs",
      key: "ep_x/call_1",
      body: {
        idempotency_key: "ep_x/call_1",
        call_id: "call_1",
        episode_id: "ep_x",
        tool: "record",
        route: "record",
        mode: "foreground",
        arguments: { nonce: "n" },
      },
    });
    const receipt = await executor.receipt(ack.jobId);
    expect(receipt).toEqual({ ok: true, content: [{ type: "text", text: "done" }], data: { polls: 3 } });
    expect(controller.seen.filter((s) => s.method === "GET")).toHaveLength(3);
  });

  test("a 5xx submit is retried with the same key and never creates a second job", async () => {
    const controller = startController({ failFirstSubmits: 2 });
    const ack = await client(controller.url).submit(job);
    expect(ack.jobId).toBe("J-1");
    expect(controller.seen.map((s) => s.key)).toEqual(["ep_x/call_1", "ep_x/call_1", "ep_x/call_1"]);
    expect(controller.jobs.size).toBe(1);
  });

  test("a 4xx submit is a refusal (no retry); an unknown job's receipt fails; an unreachable controller fails", async () => {
    const refusing = startController({ refuse: true });
    await expect(client(refusing.url).submit(job)).rejects.toThrow("refused the job");
    expect(refusing.seen).toHaveLength(1);
    const controller = startController();
    await expect(client(controller.url).receipt("J-404")).rejects.toThrow("HTTP 404");
    await expect(client("http://127.0.0.1:9").submit(job)).rejects.toThrow("not acknowledged");
  });

  test("no receipt within receipt_timeout_ms is a failure", async () => {
    const controller = startController({ pendingPolls: 1_000_000 });
    const executor = client(controller.url, { timeoutMs: 500, receiptTimeoutMs: 100, retryDelayMs: 10 });
    const { jobId } = await executor.submit(job);
    await expect(executor.receipt(jobId)).rejects.toThrow("no receipt");
  });

  test("submit_attempts bounds the submissions; receipt_attempts bounds failed polls in a row", async () => {
    const busy = startController({ failFirstSubmits: 2 });
    await expect(client(busy.url, { submitAttempts: 2 }).submit(job)).rejects.toThrow(
      "not acknowledged after 2 attempts",
    );
    expect(busy.seen).toHaveLength(2);
    expect(busy.jobs.size).toBe(0);
    const failing = startController({ failReceipts: true });
    const executor = client(failing.url, { receiptAttempts: 2 });
    const { jobId } = await executor.submit(job);
    await expect(executor.receipt(jobId)).rejects.toThrow("HTTP 503 2 times in a row");
    expect(failing.seen.filter((s) => s.method === "GET")).toHaveLength(2);
  });
});

describe("executor config", () => {
  test("defaults: 3 submit attempts, 5 failed receipt polls, 250 ms back-off base", () => {
    const config = configSchema.parse({ executor: { kind: "http", url: "http://127.0.0.1:9" } });
    expect(config.executor).toMatchObject({ submit_attempts: 3, receipt_attempts: 5, retry_delay_ms: 250 });
  });

  test("the configured retry settings reach the HTTP executor", async () => {
    const controller = startController({ failFirstSubmits: 1 });
    const config = configSchema.parse({
      executor: { kind: "http", url: controller.url, submit_attempts: 1, retry_delay_ms: 0 },
    });
    const executor = createExecutorFactory(config.executor)("ep_x");
    await expect(executor.submit(job)).rejects.toThrow("not acknowledged after 1 attempts");
    expect(controller.seen).toHaveLength(1);
    expect(() =>
      configSchema.parse({ executor: { kind: "http", url: controller.url, submit_attempts: 0 } }),
    ).toThrow();
  });
});

describe("stop", () => {
  test("POSTs {url}/jobs/{job_id}/stop with the job key and the reason; the answer is what the controller said", async () => {
    const seen: { path: string; key: string | null; body: unknown }[] = [];
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const url = new URL(req.url);
        seen.push({ path: url.pathname, key: req.headers.get("idempotency-key"), body: await req.json() });
        if (url.pathname === "/jobs/J-1/stop") return new Response("stopping", { status: 202 });
        if (url.pathname === "/jobs/J-2/stop") return new Response("already finished", { status: 404 });
        return new Response("no stop here", { status: 501 });
      },
    });
    stops.push(() => server.stop(true));
    const executor = client(`http://127.0.0.1:${server.port}`);
    const stop = executor.stop;
    if (stop === undefined) throw new Error("the HTTP executor offers stop");
    expect(await stop({ jobId: "J-1", callId: "call_1", episodeId: "ep_x" }, "cancelled")).toEqual({
      status: 202,
      stopped: true,
      detail: "stopping",
    });
    expect(seen[0]).toEqual({
      path: "/jobs/J-1/stop",
      key: "ep_x/call_1",
      body: { idempotency_key: "ep_x/call_1", call_id: "call_1", episode_id: "ep_x", reason: "cancelled" },
    });
    expect(await stop({ jobId: "J-2", callId: "c2", episodeId: "ep_x" }, "abandoned")).toMatchObject({
      status: 404,
      stopped: false,
    });
    expect(await stop({ jobId: "J-3", callId: "c3", episodeId: "ep_x" }, "deadline")).toMatchObject({
      status: 501,
      stopped: false,
      detail: "no stop here",
    });
  });

  test("an unreachable controller is an answer too (no status), never a throw", async () => {
    const executor = client("http://127.0.0.1:9", { timeoutMs: 500 });
    const answer = await executor.stop?.({ jobId: "J-1", callId: "c", episodeId: "ep_x" }, "drain_overrun");
    expect(answer).toMatchObject({ status: null, stopped: false });
    expect(answer?.detail).toStartWith("executor unreachable");
  });
});
