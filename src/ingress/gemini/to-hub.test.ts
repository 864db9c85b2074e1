import { describe, expect, test } from "bun:test";
import { expectAsFresh, hubToolCall, hubToolResult } from "../../../test/support/hub-kit.ts";
import {
  createRepeatedMembers,
  jsonBodyOf,
  parseJsonBody,
  type RepeatedMembers,
} from "../../body/parse-json-body.ts";
import type { HubRequest } from "../../hub/schema.ts";
import { sidecarErrorOf } from "../../lib/sidecar-error-of.ts";
import type { DeliveredArguments } from "./convert-contents.ts";
import { removeWaitForPrevious } from "./convert-tools.ts";
import { toHub } from "./to-hub.ts";

const geminiToHub = (body: unknown, model: string, deliveredArguments?: DeliveredArguments): HubRequest =>
  toHub(jsonBodyOf(body), {
    operation: { kind: "generate", model, stream: false, sse: false },
    ...(deliveredArguments ? { deliveredArguments } : {}),
  }).hub;

const errorOf = sidecarErrorOf;

const user = (text: string) => ({ role: "user", parts: [{ text }] });
const minimal = { contents: [user("hi")] };
/** A history of one tool round: the model called `name` (id c1) with `args`, and its result came back. */
const oneCallRound = (name: string, args: Record<string, unknown>) => ({
  contents: [
    user("go"),
    { role: "model", parts: [{ functionCall: { id: "c1", name, args } }] },
    { role: "user", parts: [{ functionResponse: { id: "c1", name, response: { output: "ok" } } }] },
  ],
});

describe("contents", () => {
  test("functionCall without id pairs with its functionResponse by order and name", () => {
    const hub = geminiToHub(
      {
        contents: [
          user("go"),
          {
            role: "model",
            parts: [
              { text: "ok " },
              { text: "now" },
              { functionCall: { name: "a", args: { x: 1 } } },
              { functionCall: { name: "a", args: { x: 2 } } },
            ],
          },
          {
            role: "user",
            parts: [
              { functionResponse: { name: "a", response: { output: "one" } } },
              { functionResponse: { name: "a", response: { error: "two failed" } } },
            ],
          },
        ],
      },
      "m",
    );
    expect(hub.messages[1]).toEqual({
      role: "assistant",
      text: "ok now",
      toolCalls: [
        hubToolCall("gemini_call_1_2", "a", '{"x":1}', "contents[1].parts[2].functionCall"),
        hubToolCall("gemini_call_1_3", "a", '{"x":2}', "contents[1].parts[3].functionCall"),
      ],
    });
    expect(hub.messages.slice(2)).toEqual([
      hubToolResult("gemini_call_1_2", "a", "one", "contents[2].parts[0].functionResponse"),
      hubToolResult(
        "gemini_call_1_3",
        "a",
        '{"error":"two failed"}',
        "contents[2].parts[1].functionResponse",
        {
          isError: true,
        },
      ),
    ]);
  });

  test("history arguments keep wait_for_previous as the client echoed it", () => {
    const hub = geminiToHub(oneCallRound("mcp_ura_record", { nonce: "n", wait_for_previous: true }), "m");
    expect(hub.messages[1]).toMatchObject({
      toolCalls: [{ arguments: '{"nonce":"n","wait_for_previous":true}' }],
    });
  });

  test("history arguments reuse the exact text Qwen wrote when the echo is equal; otherwise the echo's JSON", () => {
    const delivered = (id: string) => (id === "c1" ? '{ "b": [1, 2],  "a": "x" }' : undefined);
    const argsOf = (args: Record<string, unknown>) => {
      const message = geminiToHub(oneCallRound("a", args), "m", delivered).messages[1];
      return message?.role === "assistant" ? message.toolCalls[0]?.arguments : undefined;
    };
    expect(argsOf({ a: "x", b: [1, 2] })).toBe('{ "b": [1, 2],  "a": "x" }');
    expect(argsOf({ a: "x", b: [2, 1] })).toBe('{"a":"x","b":[2,1]}');
    expect(argsOf({ a: "x", b: [1, 2], wait_for_previous: true })).toBe(
      '{"a":"x","b":[1,2],"wait_for_previous":true}',
    );
  });

  test("an unpaired functionResponse without id is refused, naming the field", () => {
    const error = errorOf(() =>
      geminiToHub(
        {
          contents: [
            user("go"),
            { role: "user", parts: [{ functionResponse: { name: "a", response: {} } }] },
          ],
        },
        "m",
      ),
    );
    expect(error.status).toBe(400);
    expect(error.param).toBe("contents[1].parts[0].functionResponse.id");
  });

  test("text after a functionResponse ends the image attachment; user text and images follow the tool messages", () => {
    const img = { inlineData: { mimeType: "image/png", data: "AAAA" } };
    const hub = geminiToHub(
      {
        contents: [
          user("go"),
          { role: "model", parts: [{ functionCall: { id: "c1", name: "a", args: {} } }] },
          {
            role: "user",
            parts: [
              { functionResponse: { id: "c1", name: "a", response: { output: "r" } } },
              img,
              { text: "look" },
              img,
            ],
          },
        ],
      },
      "m",
    );
    expect(hub.messages.slice(2)).toEqual([
      {
        role: "tool",
        toolCallId: "c1",
        name: "a",
        content: [
          { type: "text", text: "r" },
          { type: "image", mediaType: "image/png", data: "AAAA", source: "contents[2].parts[1].inlineData" },
        ],
        source: "contents[2].parts[0].functionResponse",
      },
      {
        role: "user",
        content: [
          { type: "text", text: "look" },
          { type: "image", mediaType: "image/png", data: "AAAA", source: "contents[2].parts[3].inlineData" },
        ],
      },
    ]);
  });

  test("functionResponse.parts images join the tool message", () => {
    const hub = geminiToHub(
      {
        contents: [
          user("go"),
          { role: "model", parts: [{ functionCall: { id: "c1", name: "a" } }] },
          {
            role: "user",
            parts: [
              {
                functionResponse: {
                  id: "c1",
                  name: "a",
                  response: { output: "r" },
                  parts: [{ inlineData: { mimeType: "image/webp", data: "BB" } }],
                },
              },
            ],
          },
        ],
      },
      "m",
    );
    expect(hub.messages[2]).toMatchObject({
      content: [
        { type: "text", text: "r" },
        { type: "image", mediaType: "image/webp", data: "BB" },
      ],
    });
  });

  test.each([
    [
      { contents: [{ role: "user", parts: [{ text: "a", thoughtSignature: "real-google-signature" }] }] },
      "contents[0].parts[0].thoughtSignature",
    ],
    [
      { contents: [{ role: "user", parts: [{ fileData: { fileUri: "gs://x" } }] }] },
      "contents[0].parts[0].fileData",
    ],
    [{ contents: [{ role: "user", parts: [{ text: "a", thought: true }] }] }, "contents[0].parts[0].thought"],
    [
      {
        contents: [{ role: "user", parts: [{ text: "a", inlineData: { mimeType: "image/png", data: "" } }] }],
      },
      "contents[0].parts[0]",
    ],
    [
      { contents: [{ role: "user", parts: [{ inlineData: { mimeType: "application/pdf", data: "" } }] }] },
      "contents[0].parts[0].inlineData.mimeType",
    ],
    [
      { contents: [{ role: "model", parts: [{ inlineData: { mimeType: "image/png", data: "" } }] }] },
      "contents[0].parts[0].inlineData",
    ],
    [
      { contents: [{ role: "user", parts: [{ functionCall: { name: "a" } }] }] },
      "contents[0].parts[0].functionCall",
    ],
    [{ contents: [{ role: "function", parts: [{ text: "a" }] }] }, "contents[0].role"],
    [{ contents: [] }, "contents"],
    [{ ...minimal, cachedContent: "cachedContents/1" }, "cachedContent"],
    [{ ...minimal, generationConfig: { seed: 1 } }, "generationConfig.seed"],
    [{ ...minimal, generationConfig: { candidateCount: 2 } }, "generationConfig.candidateCount"],
    [
      { ...minimal, generationConfig: { responseMimeType: "text/x.enum" } },
      "generationConfig.responseMimeType",
    ],
    [
      { ...minimal, generationConfig: { responseJsonSchema: { type: "object" } } },
      "generationConfig.responseMimeType",
    ],
    [{ ...minimal, tools: [{ googleSearch: {} }] }, "tools[0].googleSearch"],
    [
      {
        ...minimal,
        tools: [{ functionDeclarations: [{ name: "a", parameters: { type: "OBJECT", oneOf: [] } }] }],
      },
      "tools[0].functionDeclarations[0].parameters.oneOf",
    ],
    [
      { ...minimal, tools: [{ functionDeclarations: [{ name: "a" }, { name: "a" }] }] },
      "tools[0].functionDeclarations[1].name",
    ],
    [
      { ...minimal, systemInstruction: { parts: [{ inlineData: { mimeType: "image/png", data: "" } }] } },
      "systemInstruction.parts[0]",
    ],
    [
      { ...minimal, toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["nope"] } } },
      "toolConfig.functionCallingConfig.allowedFunctionNames[0]",
    ],
  ])("refused with a 400 naming the field: %j", (body, param) => {
    const error = errorOf(() => geminiToHub(body, "m"));
    expect(error.status).toBe(400);
    expect(error.param).toBe(param);
    expect(error.message.startsWith(`${param}:`)).toBe(true);
  });
});

describe("options", () => {
  const tools = [{ functionDeclarations: [{ name: "a" }, { name: "b" }] }];
  test("generation settings map to the hub; thinkingConfig and safetySettings are listed as ignored", () => {
    const hub = geminiToHub(
      {
        ...minimal,
        safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }],
        generationConfig: {
          temperature: 0.2,
          topP: 0.5,
          topK: 3,
          maxOutputTokens: 99,
          stopSequences: ["END"],
          candidateCount: 1,
          responseMimeType: "application/json",
          responseSchema: {
            type: "OBJECT",
            properties: { n: { type: "INTEGER", nullable: true } },
            propertyOrdering: ["n"],
          },
          thinkingConfig: { thinkingBudget: 0 },
        },
      },
      "m",
    );
    expect(hub).toMatchObject({ temperature: 0.2, topP: 0.5, topK: 3, maxOutputTokens: 99, stop: ["END"] });
    expect(hub.responseFormat).toEqual({
      type: "json_schema",
      schema: { type: "object", properties: { n: { type: ["integer", "null"] } } },
    });
    expect(hub.ignored).toEqual([
      "generationConfig.responseSchema.propertyOrdering (Gemini generation-order hint)",
      "generationConfig.thinkingConfig (upstream runs with thinking disabled)",
      "safetySettings (Google safety filters; no upstream counterpart)",
    ]);
  });

  test("application/json without a schema is json_object", () => {
    expect(
      geminiToHub({ ...minimal, generationConfig: { responseMimeType: "application/json" } }, "m")
        .responseFormat,
    ).toEqual({ type: "json_object" });
  });

  test.each([
    [{ mode: "AUTO" }, "auto"],
    [{ mode: "ANY" }, "required"],
    [{ mode: "NONE" }, "none"],
    [{ mode: "ANY", allowedFunctionNames: ["b"] }, { name: "b" }],
  ])("functionCallingConfig %j → %j", (functionCallingConfig, choice) => {
    expect(geminiToHub({ ...minimal, tools, toolConfig: { functionCallingConfig } }, "m").toolChoice).toEqual(
      choice as HubRequest["toolChoice"],
    );
  });

  test("two allowed function names cannot be expressed upstream", () => {
    const error = errorOf(() =>
      geminiToHub(
        {
          ...minimal,
          tools,
          toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["a", "b"] } },
        },
        "m",
      ),
    );
    expect(error.param).toBe("toolConfig.functionCallingConfig.allowedFunctionNames");
  });

  test("OpenAPI-style parameters become JSON Schema, wait_for_previous removed from properties and required", () => {
    const hub = geminiToHub(
      {
        ...minimal,
        tools: [
          {
            functionDeclarations: [
              {
                name: "a",
                description: "d",
                parameters: {
                  type: "OBJECT",
                  properties: {
                    tags: {
                      type: "ARRAY",
                      items: { type: "STRING", enum: ["x", "y"] },
                      maxItems: "3",
                      example: ["x"],
                    },
                    wait_for_previous: { type: "BOOLEAN" },
                  },
                  required: ["tags", "wait_for_previous"],
                },
              },
            ],
          },
        ],
      },
      "m",
    );
    expect(hub.tools).toEqual([
      {
        name: "a",
        description: "d",
        parameters: {
          type: "object",
          properties: {
            tags: {
              type: "array",
              items: { type: "string", enum: ["x", "y"] },
              maxItems: 3,
              examples: [["x"]],
            },
          },
          required: ["tags"],
        },
      },
    ]);
  });

  test("a declaration without parameters takes an empty object schema", () => {
    expect(
      geminiToHub({ ...minimal, tools: [{ functionDeclarations: [{ name: "a" }] }] }, "m").tools[0]
        ?.parameters,
    ).toEqual({ type: "object", properties: {} });
  });

  test("removeWaitForPrevious leaves a schema without it untouched (same object)", () => {
    const schema = { type: "object", properties: { a: {} } };
    expect(removeWaitForPrevious(schema).schema).toBe(schema);
  });
});

describe("a system instruction and tool list resent unchanged (Gemini CLI's, every turn)", () => {
  const operation = { kind: "generate" as const, model: "ura-qwen", stream: true, sse: true };
  const request = {
    contents: [user("list the files")],
    systemInstruction: {
      role: "user",
      parts: [{ text: `You are an agent. ${"Follow the rules. ".repeat(200)}` }],
    },
    tools: [
      {
        functionDeclarations: ["read_file", "write_file"].map((name) => ({
          name,
          description: `${name}: ${"does its job carefully. ".repeat(20)}`,
          parametersJsonSchema: {
            type: "object",
            properties: { path: { type: "string" }, wait_for_previous: { type: "boolean" } },
            required: ["path"],
          },
        })),
      },
    ],
  };
  const translate = (body: unknown, repeated?: RepeatedMembers) =>
    toHub(parseJsonBody(JSON.stringify(body), repeated), { operation }).hub;

  test("each later turn translates exactly as a fresh request, its notes included", () => {
    const repeated = createRepeatedMembers(["systemInstruction", "tools"]);
    const first = translate(request, repeated);
    const later = { ...request, contents: [...request.contents, { role: "model", parts: [{ text: "ok" }] }] };
    const parsed = parseJsonBody(JSON.stringify(later), repeated);
    expect(parsed.parsed && repeated.memos.isRepeated((parsed.value as { tools: unknown }).tools)).toBe(true);
    const hub = translate(later, repeated);
    expect(hub.ignored.some((note) => note.includes("wait_for_previous"))).toBe(true);
    // The system instruction is one frozen hub message, the same object every turn, measured
    // and serialised as the fresh one.
    expect(hub.messages[0]).toBe(first.messages[0] as (typeof hub.messages)[0]);
    expectAsFresh(hub, translate(later), repeated.memos);
  });

  test("a bad field beside the repeated members is named as in a fresh request", () => {
    const repeated = createRepeatedMembers(["systemInstruction", "tools"]);
    translate(request, repeated);
    for (const body of [
      { ...request, contents: [] },
      { ...request, unknown_field: 1 },
      { ...request, generationConfig: { temperature: "hot" } },
    ]) {
      const reused = errorOf(() => translate(body, repeated));
      const fresh = errorOf(() => translate(body));
      expect({ param: reused.param, message: reused.message }).toEqual({
        param: fresh.param,
        message: fresh.message,
      });
    }
  });
});
