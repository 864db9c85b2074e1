/**
 * Every Responses object and streamed event the compiled binary emits validates
 * against the published Open Responses schema (validators generated from the
 * vendored OpenAPI document), whatever the client omitted from its tools: no
 * `strict`, no `description`, no `parameters`, Codex namespaces. The stream is
 * checked frame by frame: one event per frame, the `event:` name equal to the
 * data's type, `sequence_number` 0, 1, 2, … on every event.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  errorPayloadErrors,
  responseResourceErrors,
  specVersion,
  streamingEventErrors,
} from "../support/open-responses-schema.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

let sidecar: SidecarProcess;
let episode: LaunchInfo;

beforeAll(async () => {
  sidecar = await startSidecarProcess();
  episode = await sidecar.createEpisode({ max_turns: 0 });
});
afterAll(async () => {
  await sidecar.stop();
});

const bareTools = [
  { type: "function", name: "ura_observe" },
  { type: "function", name: "ura_record", description: null, parameters: { type: "object", properties: {} } },
  { type: "function", name: "ura_finish", description: "Finish.", strict: false },
];
const codexTools = [
  {
    type: "namespace",
    name: "mcp__ura",
    description: "Robot tools",
    tools: ["observe", "record", "finish"].map((name) => ({
      type: "function",
      name,
      parameters: { type: "object", properties: {} },
    })),
  },
  { type: "web_search" },
];

function post(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${episode.urls.responses}/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingress_key}` },
    body: JSON.stringify({ model: "ura-qwen", ...body }),
  });
}

/** Splits an SSE body into frames and checks each is one whole event. */
function framesOf(text: string): Record<string, unknown>[] {
  expect(text.endsWith("\n\n")).toBe(true);
  return text
    .slice(0, -2)
    .split("\n\n")
    .map((frame) => {
      const lines = frame.split("\n");
      expect(lines).toHaveLength(2);
      const [eventLine, dataLine] = lines as [string, string];
      expect(eventLine.startsWith("event: ")).toBe(true);
      expect(dataLine.startsWith("data: ")).toBe(true);
      const data = JSON.parse(dataLine.slice("data: ".length)) as Record<string, unknown>;
      expect(data.type).toBe(eventLine.slice("event: ".length));
      return data;
    });
}

const cases: [string, Record<string, unknown>][] = [
  ["a text answer (no tools)", { input: "Name this session." }],
  [
    "a function call to tools declared without strict, description or parameters",
    { input: [{ role: "user", content: "go" }], tools: bareTools },
  ],
  [
    "a call into a Codex namespace, built-in tools dropped",
    {
      input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "go" }] }],
      tools: codexTools,
      instructions: "Be brief.",
      reasoning: { effort: "low", summary: null },
      text: { format: { type: "text" } },
      tool_choice: "auto",
      parallel_tool_calls: true,
      store: false,
    },
  ],
];

// The first requests the real OpenCode and Codex sent (captured fixtures), as they sent them.
const capturedDir = resolve(import.meta.dir, "../../fixtures/responses");
for (const name of readdirSync(capturedDir).sort()) {
  const request = JSON.parse(readFileSync(join(capturedDir, name, "client-request.json"), "utf8")) as Record<
    string,
    unknown
  >;
  cases.push([`the captured ${name} request`, request]);
}

describe(`Responses output against the Open Responses schema ${specVersion}`, () => {
  for (const [name, body] of cases) {
    test(`JSON: ${name}`, async () => {
      const res = await post({ ...body, stream: false });
      expect(res.status).toBe(200);
      const object = await res.json();
      expect(responseResourceErrors(object)).toEqual([]);
      for (const tool of (object as { tools: Record<string, unknown>[] }).tools)
        expect(Object.keys(tool)).toEqual(
          expect.arrayContaining(["type", "name", "description", "parameters", "strict"]),
        );
    });

    test(`SSE: ${name}`, async () => {
      const res = await post({ ...body, stream: true });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("text/event-stream");
      const events = framesOf(await res.text());
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      for (const event of events) expect(streamingEventErrors(event)).toEqual([]);
      const responses = events.filter((e) => "response" in e).map((e) => e.response);
      expect(responses.length).toBeGreaterThanOrEqual(3);
      for (const response of responses) expect(responseResourceErrors(response)).toEqual([]);
      const created = responses[0] as { created_at: unknown };
      expect(Number.isInteger(created.created_at)).toBe(true);
    });
  }

  test("an invalid request answers the error payload the specification defines", async () => {
    const res = await post({ input: [{ type: "function_call_output", output: "x" }] });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: unknown };
    expect(errorPayloadErrors(body.error)).toEqual([]);
  });

  test("the validators are not vacuous: an object missing a tool's strict fails", async () => {
    const res = await post({ input: "Name this session.", stream: false });
    const object = (await res.json()) as Record<string, unknown>;
    expect(
      responseResourceErrors({
        ...object,
        tools: [{ type: "function", name: "x", description: null, parameters: null }],
      }),
    ).not.toEqual([]);
    expect(responseResourceErrors({ ...object, created_at: 1.5 })).not.toEqual([]);
    expect(streamingEventErrors({ type: "response.created", response: object })).not.toEqual([]);
  });
});
