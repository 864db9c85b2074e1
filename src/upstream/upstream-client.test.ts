import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { retrySchema } from "../config/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import { maxImageTokens } from "../models/image-tokens.ts";
import type { Fault } from "../scripted-upstream/faults.ts";
import { serveScriptedUpstream } from "../scripted-upstream/serve-scripted-upstream.ts";
import type { ChatRequest } from "./chat-schema.ts";
import { createUpstreamClient, UpstreamCancelled, UpstreamFailure } from "./upstream-client.ts";

let upstream: Awaited<ReturnType<typeof serveScriptedUpstream>>;
beforeAll(async () => {
  upstream = await serveScriptedUpstream();
});
afterAll(() => upstream.stop());
beforeEach(() => {
  upstream.scripted.received.length = 0;
});

const tool = (name: string) => ({
  type: "function" as const,
  function: { name, description: name, parameters: { type: "object" } },
});
/** Polls (every 5 ms, for at most 5 s) until `done` holds; the assertion after it says what failed. */
async function until(done: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 5_000; !done() && Date.now() < deadline; ) await Bun.sleep(5);
}

const smokeRequest: ChatRequest = {
  model: "qwen-test",
  messages: [{ role: "user", content: "observe the scene" }],
  tools: [tool("ura_observe"), tool("ura_record"), tool("ura_finish")],
  parallel_tool_calls: true,
  enable_thinking: false,
  stream: true,
  stream_options: { include_usage: true },
};

let ids = 0;
function client(overrides: Partial<Parameters<typeof createUpstreamClient>[0]> = {}) {
  return createUpstreamClient({
    baseUrl: upstream.url,
    apiKey: "sk-upstream-secret",
    retry: retrySchema.parse({ max_attempts: 3, initial_backoff_ms: 1, max_backoff_ms: 5 }),
    idleTimeoutMs: 2_000,
    deadlineMs: 30_000,
    newId: () => `gen_${++ids}`,
    ...overrides,
  });
}

async function failureOf(fault: Fault[], c = client()): Promise<UpstreamFailure> {
  upstream.scripted.enqueueFaults(fault);
  try {
    await c.complete(smokeRequest, new AbortController().signal, { episodeId: "e1" });
  } catch (error) {
    if (error instanceof UpstreamFailure) return error;
    throw error;
  }
  throw new Error("expected the exchange to fail");
}

describe("upstream client against the scripted upstream", () => {
  test("buffers a tool-call answer; sends enable_thinking:false and the credential", async () => {
    const result = await client().complete(smokeRequest, new AbortController().signal, { episodeId: "e1" });
    expect(result.response.toolCalls).toEqual([{ id: "call_1_0", name: "ura_observe", arguments: "{}" }]);
    expect(result.response.finishReason).toBe("tool_calls");
    expect(result.response.usage.inputTokens).toBeGreaterThan(0);
    expect(result.attempts).toHaveLength(1);
    const sent = upstream.scripted.received[0];
    if (sent === undefined) throw new Error("nothing reached the upstream");
    expect((sent.body as ChatRequest).enable_thinking).toBe(false);
    expect(sent.headers.authorization).toBe("<redacted>");
  });

  test("sends the body the exchange already serialised, byte for byte, instead of serialising again", async () => {
    const sentBodies: string[] = [];
    const capture = (async (input: string | URL | Request, init?: RequestInit) => {
      sentBodies.push(String(init?.body));
      return fetch(input, init);
    }) as typeof fetch;
    const serialised = JSON.stringify(smokeRequest, null, 1);
    const result = await client({ fetch: capture }).complete(smokeRequest, new AbortController().signal, {
      episodeId: "e1",
      body: serialised,
    });
    expect(result.response.finishReason).toBe("tool_calls");
    expect(sentBodies).toEqual([serialised]);
  });

  test("retries 429/500/503 and succeeds within the budget", async () => {
    upstream.scripted.enqueueFaults([
      { kind: "status", status: 429 },
      { kind: "status", status: 503 },
    ]);
    const result = await client().complete(smokeRequest, new AbortController().signal, { episodeId: "e1" });
    expect(result.attempts.map((a) => a.status)).toEqual([429, 503, 200]);
    expect(upstream.scripted.received).toHaveLength(3);
  });

  test("stops retrying at the max_attempts cap: transient failure after N attempts", async () => {
    const failure = await failureOf([
      { kind: "status", status: 500 },
      { kind: "status", status: 500 },
      { kind: "status", status: 500 },
    ]);
    expect(failure.kind).toBe("upstream_transient");
    expect(failure.message).toContain("after 3 attempts");
    expect(failure.attempts).toHaveLength(3);
    expect(upstream.scripted.received).toHaveLength(3);
  });

  test("Qwen's enable_thinking 400 is final and not retried", async () => {
    const failure = await failureOf([{ kind: "thinking_400" }]);
    expect(failure.kind).toBe("upstream_rejected");
    expect(failure.status).toBe(400);
    expect(failure.message).toContain("enable_thinking");
    expect(upstream.scripted.received).toHaveLength(1);
  });

  const invalid: [Fault["kind"], string][] = [
    ["invalid_json_args", "not valid JSON"],
    ["undeclared_tool", "did not declare"],
    ["empty_choices", "no choices"],
  ];
  for (const [kind, message] of invalid) {
    test(`${kind}: no tool call survives, typed error`, async () => {
      const failure = await failureOf([{ kind } as Fault]);
      expect(failure).toBeInstanceOf(SidecarError);
      expect(failure.kind).toBe("upstream_invalid");
      expect(failure.message).toContain(message);
      expect(upstream.scripted.received).toHaveLength(1);
    });
  }

  test("each attempt keeps the usage the upstream reported on it, a refused answer's too (it was billed)", async () => {
    const refused = await failureOf([{ kind: "invalid_json_args" }]);
    expect(refused.attempts).toHaveLength(1);
    expect(refused.attempts[0]?.ended).toBe("invalid_answer");
    expect(refused.attempts[0]?.usage?.inputTokens).toBeGreaterThan(0);
    upstream.scripted.enqueueFaults([{ kind: "status", status: 429 }]);
    const result = await client().complete(smokeRequest, new AbortController().signal, { episodeId: "e1" });
    expect(result.attempts.map((a) => [a.ended, a.usage !== undefined])).toEqual([
      ["http_error", false],
      ["answered", true],
    ]);
    expect(result.attempts[1]?.usage).toEqual(result.response.usage);
  });

  test("connection reset is retried as a network error", async () => {
    upstream.scripted.enqueueFaults([{ kind: "reset" }]);
    const result = await client().complete(smokeRequest, new AbortController().signal, { episodeId: "e1" });
    expect(result.attempts[0]).toMatchObject({
      ended: "connection",
      classification: "transient",
      cause: "connection",
    });
    expect(result.attempts[0]?.error).toContain("connection to the upstream failed");
    expect(result.attempts).toHaveLength(2);
  });

  test("a stream cut before [DONE] is retried, the second answer delivered", async () => {
    upstream.scripted.enqueueFaults([{ kind: "cut_mid_tool_call" }]);
    const result = await client().complete(smokeRequest, new AbortController().signal, { episodeId: "e1" });
    expect(result.attempts.map((a) => a.ended)).toEqual(["stream_cut", "answered"]);
    expect(result.attempts[0]).toMatchObject({
      status: 200,
      cause: "stream_cut",
      classification: "transient",
    });
    expect(result.response.toolCalls.map((c) => c.name)).toEqual(["ura_observe"]);
  });

  test("an error event inside a 200 stream is classified by its code: an unknown one is retried", async () => {
    let calls = 0;
    const erroring = (async (input: string | URL | Request, init?: RequestInit) => {
      calls += 1;
      if (calls > 1) return fetch(input, init);
      const event = { error: { code: "InternalError", message: "An internal error has occured." } };
      return new Response(`data: ${JSON.stringify(event)}\n\n`, {
        headers: { "content-type": "text/event-stream" },
      });
    }) as typeof fetch;
    const result = await client({ fetch: erroring }).complete(smokeRequest, new AbortController().signal, {
      episodeId: "e1",
    });
    expect(result.attempts[0]).toMatchObject({
      status: 200,
      ended: "stream_error",
      provider_code: "InternalError",
      classification: "transient",
      cause: "server_error",
    });
    expect(result.attempts[1]?.ended).toBe("answered");
  });

  test("a silent upstream (no response head) is cut at the idle timeout, at the upstream too, and retried", async () => {
    upstream.scripted.enqueueFaults([{ kind: "timeout" }]);
    const result = await client({ idleTimeoutMs: 300 }).complete(smokeRequest, new AbortController().signal, {
      episodeId: "e1",
    });
    expect(result.attempts[0]).toMatchObject({
      ended: "idle_timeout",
      idle_ms: 300,
      classification: "transient",
      cause: "idle_timeout",
    });
    expect(result.attempts[0]?.first_byte_ms).toBeUndefined();
    expect(result.attempts[0]?.ms).toBeGreaterThanOrEqual(290);
    expect(result.attempts[1]?.ended).toBe("answered");
    await until(() => upstream.scripted.received[0]?.aborted === true);
    expect(upstream.scripted.received[0]?.aborted).toBe(true);
  });

  test("an upstream that goes silent after its response head is cut too", async () => {
    upstream.scripted.enqueueFaults([{ kind: "slow", ms: 3_000 }]);
    const result = await client({ idleTimeoutMs: 300 }).complete(smokeRequest, new AbortController().signal, {
      episodeId: "e1",
    });
    expect(result.attempts.map((a) => a.ended)).toEqual(["idle_timeout", "answered"]);
    expect(result.attempts[0]?.ms).toBeLessThan(2_000);
  });

  test("an invalid API key (401) fails at once: one attempt, final, the cause named", async () => {
    const failure = await failureOf(
      [
        {
          kind: "status",
          status: 401,
          body: JSON.stringify({
            code: "InvalidApiKey",
            message: "Invalid API-key provided.",
            request_id: "r",
          }),
        },
      ],
      client({ retry: retrySchema.parse({}) }),
    );
    expect(failure.kind).toBe("upstream_rejected");
    expect(failure.status).toBe(400);
    expect(failure.message).toStartWith("the upstream rejected the API key (InvalidApiKey, HTTP 401)");
    expect(failure.attempts).toEqual([
      expect.objectContaining({
        status: 401,
        ended: "http_error",
        provider_code: "InvalidApiKey",
        classification: "final",
        cause: "invalid_api_key",
      }),
    ]);
    expect(failure.attempts[0]?.retry_in_ms).toBeUndefined();
    expect(upstream.scripted.received).toHaveLength(1);
  });

  test("Retry-After is honoured: the wait before the retry is at least what it asks", async () => {
    upstream.scripted.enqueueFaults([{ kind: "status", status: 429, retry_after: "1" }]);
    const started = Date.now();
    const result = await client().complete(smokeRequest, new AbortController().signal, { episodeId: "e1" });
    expect(result.attempts[0]).toMatchObject({ status: 429, retry_in_ms: 1000, cause: "throttled" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(result.attempts).toHaveLength(2);
  });

  test("a 429 insufficient_quota burst longer than a few retries is ridden out within the time budget", async () => {
    const tpm = JSON.stringify({
      error: {
        message: "You exceeded your current quota, please check your plan and billing details.",
        type: "insufficient_quota",
        code: "insufficient_quota",
      },
    });
    upstream.scripted.enqueueFaults([{ kind: "status", status: 429, body: tpm, for_ms: 1_500 }]);
    const retry = retrySchema.parse({ initial_backoff_ms: 100, max_backoff_ms: 400, max_wait_ms: 10_000 });
    const result = await client({ retry }).complete(smokeRequest, new AbortController().signal, {
      episodeId: "e1",
    });
    const throttled = result.attempts.slice(0, -1);
    expect(throttled.length).toBeGreaterThanOrEqual(3);
    // At most one attempt per floor (100 ms) over the 1.5 s window, plus the first and the answered one.
    expect(result.attempts.length).toBeLessThanOrEqual(1_500 / 100 + 2);
    for (const a of throttled) {
      expect(a).toMatchObject({
        status: 429,
        provider_code: "insufficient_quota",
        cause: "allocation_quota",
      });
      expect(a.retry_in_ms).toBeGreaterThanOrEqual(100);
      expect(a.retry_in_ms).toBeLessThanOrEqual(400);
    }
    expect(result.attempts.at(-1)?.ended).toBe("answered");
  });

  test("a slow answer that never goes silent for the idle timeout is not cut, however long in total", async () => {
    // Head after 200 ms, then 12 chunks 150 ms apart: ~2 s in all, against an idle timeout of 400 ms.
    upstream.scripted.enqueueFaults([{ kind: "trickle", head_ms: 200, every_ms: 150, chunks: 12 }]);
    const result = await client({ idleTimeoutMs: 400 }).complete(smokeRequest, new AbortController().signal, {
      episodeId: "e1",
    });
    expect(result.attempts).toHaveLength(1);
    expect(result.attempts[0]?.ms).toBeGreaterThan(1_500);
    expect(result.attempts[0]?.first_byte_ms).toBeGreaterThanOrEqual(190);
    expect(upstream.scripted.received[0]?.aborted).toBe(false);
  });

  test("the deadline bounds the whole exchange: a trickle that outlasts it is cut and not retried", async () => {
    upstream.scripted.enqueueFaults([{ kind: "trickle", head_ms: 0, every_ms: 100, chunks: 50 }]);
    const started = Date.now();
    const failure = await failureOf([], client({ idleTimeoutMs: 400, deadlineMs: 800 }));
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(failure.kind).toBe("upstream_transient");
    expect(failure.message).toContain("deadline (upstream.deadline_ms, 800 ms) during an attempt");
    expect(failure.attempts).toEqual([expect.objectContaining({ ended: "deadline" })]);
    await until(() => upstream.scripted.received[0]?.aborted === true);
    expect(upstream.scripted.received).toHaveLength(1);
  });

  test("the deadline bounds the wait at the gate too: the exchange ends there, naming where it was", async () => {
    const closedGate = {
      admit: ({ signal }: { signal: AbortSignal }) =>
        new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    };
    const started = Date.now();
    const failure = await failureOf([], client({ gate: closedGate, deadlineMs: 200 }));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(failure.kind).toBe("upstream_transient");
    expect(failure.message).toContain(
      "deadline (upstream.deadline_ms, 200 ms) while waiting in the upstream queue",
    );
    expect(failure.attempts).toEqual([]);
    expect(upstream.scripted.received).toHaveLength(0);
  });

  test("a Retry-After beyond the retry budget ends the exchange at once instead of waiting in vain", async () => {
    const retry = retrySchema.parse({ initial_backoff_ms: 1, max_backoff_ms: 5, max_wait_ms: 2_000 });
    const started = Date.now();
    const failure = await failureOf([{ kind: "status", status: 429, retry_after: "30" }], client({ retry }));
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(failure.message).toContain("Retry-After");
    expect(failure.attempts).toHaveLength(1);
    expect(failure.attempts[0]?.retry_in_ms).toBeUndefined();
  });

  test("the gate hears each attempt's outcome: throttled, failed, answered", async () => {
    const outcomes: string[] = [];
    const gate = {
      async admit() {
        return { waitedMs: 7, release: (outcome: string) => outcomes.push(outcome) };
      },
    };
    upstream.scripted.enqueueFaults([
      { kind: "status", status: 429 },
      { kind: "status", status: 503 },
    ]);
    const result = await client({ gate }).complete(smokeRequest, new AbortController().signal, {
      episodeId: "e1",
    });
    expect(outcomes).toEqual(["throttled", "failed", "answered"]);
    expect(result.attempts.map((a) => a.queue_ms)).toEqual([7, 7, 7]);
  });

  test("the gate is asked with the episode and the request's input tokens, an image counted by its patches", async () => {
    const asked: { episodeId: string; estimatedTokens: number }[] = [];
    const gate = {
      async admit(request: { episodeId: string; estimatedTokens: number }) {
        asked.push({ episodeId: request.episodeId, estimatedTokens: request.estimatedTokens });
        return { waitedMs: 0, release() {} };
      },
    };
    const frame = `data:image/png;base64,${"A".repeat(200_000)}`;
    const withFrame: ChatRequest = {
      ...smokeRequest,
      messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: frame } }] }],
    };
    await client({ gate }).complete(withFrame, new AbortController().signal, { episodeId: "e7" });
    const textTokens = Math.ceil((JSON.stringify(withFrame).length - frame.length) / 4);
    expect(asked).toEqual([{ episodeId: "e7", estimatedTokens: textTokens + maxImageTokens }]);
  });

  test("cancellation reaches the socket and cancels the retry wait", async () => {
    const controller = new AbortController();
    upstream.scripted.enqueueFaults([{ kind: "timeout" }]);
    const pending = client().complete(smokeRequest, controller.signal, { episodeId: "e1" });
    // Cancelled once the upstream holds the request (on a loaded machine that can take over 100 ms).
    await until(() => upstream.scripted.received.length > 0);
    controller.abort(new Error("shutdown"));
    const cancelled = await pending.catch((error: unknown) => error);
    expect(cancelled).toBeInstanceOf(UpstreamCancelled);
    expect((cancelled as UpstreamCancelled).message).toBe("shutdown");
    expect((cancelled as UpstreamCancelled).at).toBe("attempt");
    expect((cancelled as UpstreamCancelled).attempts).toEqual([
      expect.objectContaining({ ended: "cancelled" }),
    ]);
    await until(() => upstream.scripted.received[0]?.aborted === true);
    expect(upstream.scripted.received[0]?.aborted).toBe(true);

    const waiting = client({
      retry: retrySchema.parse({ max_attempts: 3, initial_backoff_ms: 60_000, max_backoff_ms: 60_000 }),
    });
    const second = new AbortController();
    upstream.scripted.enqueueFaults([{ kind: "status", status: 503 }]);
    const started = Date.now();
    const retrying = waiting.complete(smokeRequest, second.signal, { episodeId: "e1" });
    await Bun.sleep(100);
    second.abort(new Error("cancelled during backoff"));
    const inBackoff = await retrying.catch((error: unknown) => error);
    expect(inBackoff).toBeInstanceOf(UpstreamCancelled);
    expect(inBackoff).toMatchObject({ message: "cancelled during backoff", at: "backoff" });
    expect((inBackoff as UpstreamCancelled).attempts).toEqual([
      expect.objectContaining({ ended: "http_error", status: 503, retry_in_ms: expect.any(Number) }),
    ]);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test("a retry cancelled while it waits at the gate says so: the queue, after the failed attempt", async () => {
    let admitted = 0;
    // The first attempt goes at once; the retry's turn never comes.
    const gate = {
      admit: ({ signal }: { signal: AbortSignal }) =>
        admitted++ === 0
          ? Promise.resolve({ waitedMs: 0, release() {} })
          : new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    };
    const controller = new AbortController();
    upstream.scripted.enqueueFaults([{ kind: "status", status: 503 }]);
    const retry = retrySchema.parse({ max_attempts: 3, initial_backoff_ms: 1, max_backoff_ms: 1 });
    const pending = client({ gate, retry }).complete(smokeRequest, controller.signal, { episodeId: "e1" });
    await until(() => admitted === 2);
    controller.abort(new Error("the client closed the request"));
    const cancelled = await pending.catch((error: unknown) => error);
    expect(cancelled).toBeInstanceOf(UpstreamCancelled);
    expect(cancelled).toMatchObject({ at: "queue" });
    expect((cancelled as UpstreamCancelled).attempts).toEqual([
      expect.objectContaining({ ended: "http_error", status: 503 }),
    ]);
    expect(upstream.scripted.received).toHaveLength(1);
  });
});
