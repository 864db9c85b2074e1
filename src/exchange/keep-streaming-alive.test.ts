import { expect, test } from "bun:test";
import { SidecarError, toSidecarError } from "../lib/errors.ts";
import {
  asksForStream,
  type KeepAliveOutcome,
  keepStreamingAlive,
  streamForms,
} from "./keep-streaming-alive.ts";

const timing = { headAfterMs: 30, everyMs: 40 };
const renderError = (error: SidecarError) =>
  Response.json(
    { error: { message: error.message, type: "invalid_request_error", param: null, code: error.kind } },
    { status: error.status },
  );

function later<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms));
}

function sse(frames: string[], onDone?: (how: string) => void): Response {
  let i = 0;
  return new Response(
    new ReadableStream<Uint8Array>({
      pull(controller) {
        const frame = frames[i++];
        if (frame === undefined) {
          onDone?.("delivered");
          controller.close();
        } else controller.enqueue(new TextEncoder().encode(frame));
      },
      cancel() {
        onDone?.("revoked");
      },
    }),
    { headers: { "content-type": "text/event-stream" } },
  );
}

const run = (answer: Promise<Response>, protocol: keyof typeof streamForms = "messages") => {
  const heads: number[] = [];
  const states: KeepAliveOutcome[] = [];
  const response = keepStreamingAlive({
    answer,
    form: streamForms[protocol],
    timing,
    renderError,
    toSidecarError,
    headSent: (state) => {
      heads.push(Date.now());
      states.push(state);
    },
  });
  return { response, heads, states };
};

test("an answer ready before head_after_ms is the answer itself, byte for byte (no keepalive)", async () => {
  const answer = sse(["event: a\ndata: 1\n\n"]);
  const { response, heads } = run(Promise.resolve(answer));
  expect(await response).toBe(answer);
  expect(heads).toEqual([]);
  const refusal = renderError(new SidecarError("invalid_request", "bad field"));
  expect(await run(Promise.resolve(refusal)).response).toBe(refusal);
});

test("a slow answer: the head and a keepalive at head_after_ms, one every every_ms, then the answer's frames", async () => {
  let outcome = "";
  const { response, heads } = run(
    later(
      150,
      sse(["event: a\ndata: 1\n\n", "event: b\ndata: 2\n\n"], (o) => (outcome = o)),
    ),
  );
  const head = await response;
  expect(head.status).toBe(200);
  expect(head.headers.get("content-type")).toStartWith("text/event-stream");
  expect(heads.length).toBe(1);
  const text = await head.text();
  const pings = text.split(streamForms.messages.keepalive).length - 1;
  expect(pings).toBeGreaterThanOrEqual(3);
  expect(text.endsWith("event: a\ndata: 1\n\nevent: b\ndata: 2\n\n")).toBe(true);
  expect(text.slice(0, -"event: a\ndata: 1\n\nevent: b\ndata: 2\n\n".length)).toBe(
    streamForms.messages.keepalive.repeat(pings),
  );
  expect(outcome).toBe("delivered");
});

test("a failure after the head ends the stream in each protocol's final in-stream form", async () => {
  const failure = () =>
    later(60, renderError(new SidecarError("episode_closed", "upstream refused: key invalid")));
  const messages = await (await run(failure(), "messages").response).text();
  expect(messages).toEndWith(
    'event: error\ndata: {"error":{"message":"upstream refused: key invalid","type":"invalid_request_error","param":null,"code":"episode_closed"}}\n\n',
  );
  const gemini = await (await run(failure(), "gemini").response).text();
  const geminiError = JSON.parse(gemini.trim()) as { error: { message: string } };
  expect(geminiError.error.message).toBe("upstream refused: key invalid");
  const responses = await (await run(failure(), "responses").response).text();
  // The AI SDK's schema for both events requires a sequence_number (OpenCode ignores them without).
  expect(responses).toContain(
    'event: error\ndata: {"type":"error","code":"episode_closed","message":"upstream refused: key invalid","param":null,"sequence_number":0}',
  );
  expect(responses).toContain('"type":"response.failed"');
});

test("the Gemini keepalive is whitespace its parser skips before `data:`; Responses' is an event, not a comment", () => {
  expect(streamForms.gemini.keepalive.trim()).toBe("");
  expect(/^\s*data: (.*)(?:\n\n)/.test(`${streamForms.gemini.keepalive}data: {}\n\n`)).toBe(true);
  expect(streamForms.responses.keepalive).toStartWith("event: keepalive\ndata: ");
});

test("a client gone during the wait cancels the answer's stream when it comes (its calls revoked)", async () => {
  let outcome = "";
  const { response, states } = run(
    later(
      120,
      sse(["event: a\ndata: 1\n\n"], (o) => (outcome = o)),
    ),
  );
  const head = await response;
  const reader = head.body?.getReader();
  await reader?.read();
  await reader?.cancel("gone");
  // A failure from now on is told to nobody (the records say so by leaving out told_in_stream).
  expect(states[0]?.clientLeft).toBe(true);
  await Bun.sleep(150);
  expect(outcome).toBe("revoked");
});

test("only a parsed body with stream:true asks for a stream", () => {
  const received = { parts: [], length: 0 } as never;
  expect(asksForStream({ parsed: true, value: { stream: true }, received })).toBe(true);
  expect(asksForStream({ parsed: true, value: { stream: "yes" }, received })).toBe(false);
  expect(asksForStream({ parsed: false, received, reason: "x" })).toBe(false);
});
