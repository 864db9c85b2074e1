/**
 * keepStreamingAlive as a pure function of an answer promise: the answer itself when it
 * comes before head_after_ms, else the head, keepalives and the answer's frames, or the
 * failure in each protocol's in-stream form. The slow answers here are promises the test
 * resolves once the stream has shown what is asserted (the head, three keepalives), never
 * timers racing the keepalive's own: on a loaded machine a late timer made the answer
 * arrive before the head or after too few keepalives.
 */
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
  // The answer comes only once three keepalives were read: driven by what the stream
  // sent, not by a wall-clock guess that a loaded machine's late timers break.
  const answer = Promise.withResolvers<Response>();
  const delivered = Promise.withResolvers<string>();
  const frames = ["event: a\ndata: 1\n\n", "event: b\ndata: 2\n\n"];
  const started = Date.now();
  const { response, heads } = run(answer.promise);
  const head = await response;
  expect(head.status).toBe(200);
  expect(head.headers.get("content-type")).toStartWith("text/event-stream");
  expect(heads.length).toBe(1);
  expect((heads[0] as number) - started).toBeGreaterThanOrEqual(timing.headAfterMs - 2);
  const reader = (head.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const pingsIn = (text: string) => text.split(streamForms.messages.keepalive).length - 1;
  let text = "";
  while (pingsIn(text) < 3) {
    const next = await reader.read();
    if (next.done) throw new Error(`the stream ended before the answer: ${text}`);
    text += decoder.decode(next.value, { stream: true });
  }
  // Three keepalives are the head's own and two more, at least every_ms apart.
  expect(Date.now() - (heads[0] as number)).toBeGreaterThanOrEqual(2 * timing.everyMs - 2);
  answer.resolve(sse(frames, (o) => delivered.resolve(o)));
  for (let next = await reader.read(); !next.done; next = await reader.read())
    text += decoder.decode(next.value, { stream: true });
  const pings = pingsIn(text);
  expect(pings).toBeGreaterThanOrEqual(3);
  expect(text).toBe(streamForms.messages.keepalive.repeat(pings) + frames.join(""));
  expect(await delivered.promise).toBe("delivered");
});

test("a failure after the head ends the stream in each protocol's final in-stream form", async () => {
  // The failure comes once the head went out, whatever the machine's timers do.
  const failedAfterHead = async (protocol: keyof typeof streamForms) => {
    const answer = Promise.withResolvers<Response>();
    const head = await run(answer.promise, protocol).response;
    expect(head.status).toBe(200);
    answer.resolve(renderError(new SidecarError("episode_closed", "upstream refused: key invalid")));
    return head.text();
  };
  const messages = await failedAfterHead("messages");
  expect(messages).toEndWith(
    'event: error\ndata: {"error":{"message":"upstream refused: key invalid","type":"invalid_request_error","param":null,"code":"episode_closed"}}\n\n',
  );
  const gemini = await failedAfterHead("gemini");
  const geminiError = JSON.parse(gemini.trim()) as { error: { message: string } };
  expect(geminiError.error.message).toBe("upstream refused: key invalid");
  const responses = await failedAfterHead("responses");
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
  const answer = Promise.withResolvers<Response>();
  const outcome = Promise.withResolvers<string>();
  const { response, states } = run(answer.promise);
  const head = await response;
  const reader = head.body?.getReader();
  await reader?.read();
  await reader?.cancel("gone");
  // A failure from now on is told to nobody (the records say so by leaving out told_in_stream).
  expect(states[0]?.clientLeft).toBe(true);
  answer.resolve(sse(["event: a\ndata: 1\n\n"], (o) => outcome.resolve(o)));
  expect(await outcome.promise).toBe("revoked");
});

test("only a parsed body with stream:true asks for a stream", () => {
  const received = { parts: [], length: 0 } as never;
  expect(asksForStream({ parsed: true, value: { stream: true }, received })).toBe(true);
  expect(asksForStream({ parsed: true, value: { stream: "yes" }, received })).toBe(false);
  expect(asksForStream({ parsed: false, received, reason: "x" })).toBe(false);
});
