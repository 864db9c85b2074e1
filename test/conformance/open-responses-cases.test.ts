/**
 * The public Open Responses compliance cases that need no built-in tools or file
 * inputs, run against the compiled binary the way the suite runs them: its request
 * bodies as published (the suite's `src/lib/compliance-tests.ts`: basic-response,
 * streaming-response, system-prompt, tool-calling, tool-calling-streaming,
 * image-input, multi-turn), `POST {base}/responses` with `stream` set, the JSON
 * answer or the stream's final response validated against the published schema,
 * every streamed event against its own, then the suite's checks (output present,
 * status completed, a function_call where one is asked for, the function-call
 * stream events). Then the two stateful cases: a continuation by
 * `previous_response_id`, and a function-call round trip whose second turn carries
 * only the `function_call_output` — each checked on what reached the upstream.
 * The model is the only stand-in: a Chat Completions server answering what each
 * case needs.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type CannedReply, serveCannedUpstream } from "../support/canned-upstream.ts";
import { responseResourceErrors, streamingEventErrors } from "../support/open-responses-schema.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

const upstream = serveCannedUpstream();
let sidecar: SidecarProcess;
let episode: LaunchInfo;
beforeAll(async () => {
  sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
  episode = await sidecar.createEpisode({ max_turns: 0 });
}, 30_000);
afterAll(async () => {
  await sidecar?.stop();
  upstream.stop();
});

type Output = { type: string; call_id?: string; name?: string; arguments?: string };
type ResponseResource = { id: string; status: string; output: Output[]; previous_response_id: string | null };
type Event = { type: string; item?: { type?: string }; response?: ResponseResource };

/** What the suite does: POST {base}/responses with the case's body and `stream`. */
async function run(body: Record<string, unknown>, streaming: boolean) {
  const res = await fetch(`${episode.urls.responses}/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingress_key}` },
    body: JSON.stringify({ ...body, stream: streaming }),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  if (!streaming) return { response: JSON.parse(text) as ResponseResource, events: [] as Event[] };
  const events = text
    .split("\n\n")
    .filter((frame) => frame.includes("data: "))
    .map((frame) => JSON.parse(frame.slice(frame.indexOf("data: ") + 6)) as Event);
  const final = events.findLast((e) => e.type === "response.completed")?.response;
  if (!final) throw new Error(`no response.completed in ${text.slice(0, 400)}`);
  return { response: final, events };
}

/** The suite's schema check and its semantic checks. */
function check(result: Awaited<ReturnType<typeof run>>, expectFunctionCall: boolean): void {
  const { response, events } = result;
  expect(responseResourceErrors(response)).toEqual([]);
  for (const event of events) expect(streamingEventErrors(event)).toEqual([]);
  expect(response.output.length).toBeGreaterThan(0);
  if (expectFunctionCall) {
    expect(response.output.some((o) => o.type === "function_call")).toBe(true);
    if (events.length > 0) {
      const types = events.map((e) => e.type);
      expect(
        events.some((e) => e.type === "response.output_item.added" && e.item?.type === "function_call"),
      ).toBe(true);
      expect(types).toContain("response.function_call_arguments.delta");
      expect(types).toContain("response.function_call_arguments.done");
      expect(
        events.some((e) => e.type === "response.output_item.done" && e.item?.type === "function_call"),
      ).toBe(true);
    }
  } else expect(response.status).toBe("completed");
}

const model = "gpt-4o-mini"; // the suite's default
const weatherTool = {
  type: "function",
  name: "get_weather",
  description: "Get the current weather for a location",
  parameters: {
    type: "object",
    properties: {
      location: { type: "string", description: "The city and state, e.g. San Francisco, CA" },
    },
    required: ["location"],
  },
};
const weatherQuestion = {
  type: "message",
  role: "user",
  content: "What's the weather like in San Francisco?",
};
const weatherCall: CannedReply = {
  kind: "calls",
  calls: [{ id: "call_weather_1", name: "get_weather", arguments: '{"location":"San Francisco, CA"}' }],
};
// The suite's image: a 32×32 PNG (a red heart on white).
const heart =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAABmklEQVR42tyWAaTyUBzFew/eG4AHz+MBSAHKBiJRGFKwIgQQJKLUIioBIhCAiCAAEizAQIAECaASqFFJq84nudjnaqvuPnxzgP9xfrq5938csPn7PwHTKSoViCIEAYEAMhmoKsU2mUCWEQqB5xEMIp/HaGQG2G6RSuH9HQ7H34rFrtPbdz4jl6PbwmEsl3QA1mt4vcRKk8dz9eg6IpF7tt9fzGY0gCgafFRFo5Blc5vLhf3eCOj1yNhM5GRMVK0aATxPZoz09YXjkQDmczJgquGQAPp9WwCNBgG027YACgUC6HRsAZRKBDAY2AJoNv/ZnwzA6WScznG3p4UAymXGAEkyXrTFAh8fLAGqagQAyGaZpYsi7bHTNPz8MEj//LxuFPo+UBS8vb0KaLXubrRa7aX0RMLCykwmn0z3+XA4WACcTpCkh9MFAZpmuVXo+mO/w+/HZvNgbblcUCxaSo/Hyck80Yu6XXDcvfVZr79cvMZjuN2U9O9vKAqjZrfbIZ0mV4TUi9Xqz6jddNy//7+e3n8Fhf/Llo2kxi8AQyGRoDkmAhAAAAAASUVORK5CYII=";

const cases: { id: string; streaming: boolean; body: Record<string, unknown>; reply: CannedReply }[] = [
  {
    id: "basic-response",
    streaming: false,
    body: { model, input: [{ type: "message", role: "user", content: "Say hello in exactly 3 words." }] },
    reply: { kind: "text", text: "Hello there, friend." },
  },
  {
    id: "streaming-response",
    streaming: true,
    body: { model, input: [{ type: "message", role: "user", content: "Count from 1 to 5." }] },
    reply: { kind: "text", text: "1, 2, 3, 4, 5" },
  },
  {
    id: "system-prompt",
    streaming: false,
    body: {
      model,
      input: [
        { type: "message", role: "system", content: "You are a pirate. Always respond in pirate speak." },
        { type: "message", role: "user", content: "Say hello." },
      ],
    },
    reply: { kind: "text", text: "Ahoy!" },
  },
  {
    id: "tool-calling",
    streaming: false,
    body: { model, input: [weatherQuestion], tools: [weatherTool] },
    reply: weatherCall,
  },
  {
    id: "tool-calling-streaming",
    streaming: true,
    body: { model, input: [weatherQuestion], tools: [weatherTool] },
    reply: weatherCall,
  },
  {
    id: "image-input",
    streaming: false,
    body: {
      model,
      input: [
        {
          type: "message",
          role: "user",
          content: [
            { type: "input_text", text: "What do you see in this image? Answer in one sentence." },
            { type: "input_image", image_url: heart },
          ],
        },
      ],
    },
    reply: { kind: "text", text: "A red heart on a white background." },
  },
  {
    id: "multi-turn",
    streaming: false,
    body: {
      model,
      input: [
        { type: "message", role: "user", content: "My name is Alice." },
        {
          type: "message",
          role: "assistant",
          content: "Hello Alice! Nice to meet you. How can I help you today?",
        },
        { type: "message", role: "user", content: "What is my name?" },
      ],
    },
    reply: { kind: "text", text: "Your name is Alice." },
  },
];

type ChatMessage = { role: string; content: unknown; tool_calls?: { id: string }[]; tool_call_id?: string };
const upstreamMessages = (i: number) => (upstream.received[i]?.body.messages ?? []) as ChatMessage[];

describe("the public Open Responses compliance cases against the binary", () => {
  for (const { id, streaming, body, reply } of cases) {
    test(id, async () => {
      upstream.reset();
      upstream.reply(reply);
      check(await run(body, streaming), reply.kind === "calls");
      expect(upstream.received).toHaveLength(1);
      // The suite's PNG reaches the model as lossless WebP, as every image does.
      if (id === "image-input")
        expect(JSON.stringify(upstreamMessages(0))).toContain("data:image/webp;base64,");
    });
  }
});

describe("the stateful cases", () => {
  test("previous_response_id: the second turn continues the stored first one", async () => {
    upstream.reset();
    upstream.reply({ kind: "text", text: "Nice to meet you, Alice." }, { kind: "text", text: "Alice." });
    const first = await run({ model, input: "My name is Alice.", store: true }, false);
    check(first, false);
    const second = await run(
      { model, previous_response_id: first.response.id, input: "What is my name?" },
      true,
    );
    check(second, false);
    expect(second.response.previous_response_id).toBe(first.response.id);
    expect(upstreamMessages(1).map((m) => [m.role, m.content])).toEqual([
      ["user", "My name is Alice."],
      ["assistant", "Nice to meet you, Alice."],
      ["user", "What is my name?"],
    ]);
  });

  test("a function-call round trip whose second turn is only the function_call_output", async () => {
    upstream.reset();
    upstream.reply(weatherCall, { kind: "text", text: "Sunny, 18 °C." });
    const first = await run({ model, input: [weatherQuestion], tools: [weatherTool] }, false);
    check(first, true);
    const call = first.response.output.find((o) => o.type === "function_call");
    expect(call?.call_id).toBe("call_weather_1");
    const second = await run(
      {
        model,
        previous_response_id: first.response.id,
        input: [{ type: "function_call_output", call_id: call?.call_id, output: '{"temperature_c":18}' }],
        tools: [weatherTool],
      },
      false,
    );
    check(second, false);
    const sent = upstreamMessages(1);
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(sent[1]?.tool_calls?.map((c) => c.id)).toEqual(["call_weather_1"]);
    expect(sent[2]).toMatchObject({ tool_call_id: "call_weather_1", content: '{"temperature_c":18}' });
  });
});
