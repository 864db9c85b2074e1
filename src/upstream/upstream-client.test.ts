import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { retrySchema } from "../config/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import type { Fault } from "../scripted-upstream/faults.ts";
import { serveScriptedUpstream } from "../scripted-upstream/serve-scripted-upstream.ts";
import type { ChatRequest } from "./chat-schema.ts";
import { createUpstreamClient, UpstreamFailure } from "./upstream-client.ts";

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
    timeoutMs: 2_000,
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

  test("stops retrying when the budget is spent: transient failure after N attempts", async () => {
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
    ["cut_mid_tool_call", "ended before completion"],
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

  test("connection reset is retried as a network error", async () => {
    upstream.scripted.enqueueFaults([{ kind: "reset" }]);
    const result = await client().complete(smokeRequest, new AbortController().signal, { episodeId: "e1" });
    expect(result.attempts[0]?.error).toContain("connection failed");
    expect(result.attempts).toHaveLength(2);
  });

  test("a per-attempt timeout aborts the request at the upstream and retries stop at the budget", async () => {
    const failure = await failureOf(
      [{ kind: "timeout" }, { kind: "timeout" }],
      client({ timeoutMs: 150, retry: retrySchema.parse({ max_attempts: 2, initial_backoff_ms: 1 }) }),
    );
    expect(failure.kind).toBe("upstream_transient");
    expect(failure.message).toContain("timed out");
    await Bun.sleep(20);
    expect(upstream.scripted.received.map((r) => r.aborted)).toEqual([true, true]);
  });

  test("cancellation reaches the socket and cancels the retry wait", async () => {
    const controller = new AbortController();
    upstream.scripted.enqueueFaults([{ kind: "timeout" }]);
    const pending = client().complete(smokeRequest, controller.signal, { episodeId: "e1" });
    // Cancelled once the upstream holds the request (on a loaded machine that can take over 100 ms).
    await until(() => upstream.scripted.received.length > 0);
    controller.abort(new Error("shutdown"));
    await expect(pending).rejects.toThrow("shutdown");
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
    await expect(retrying).rejects.toThrow("cancelled during backoff");
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
