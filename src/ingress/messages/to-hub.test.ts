import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { expectAsFresh, hubToolCall, hubToolResult } from "../../../test/support/hub-kit.ts";
import {
  createRepeatedMembers,
  jsonBodyOf,
  parseJsonBody,
  type RepeatedMembers,
} from "../../body/parse-json-body.ts";
import { stringifyReusingMembers } from "../../lib/frozen-json.ts";
import { sidecarErrorOf } from "../../lib/sidecar-error-of.ts";
import { type ToHubContext, toHub } from "./to-hub.ts";

const messagesToHub = (body: unknown, ctx?: ToHubContext) => toHub(jsonBodyOf(body), ctx).hub;

const errorOf = sidecarErrorOf;

const minimal = { model: "ura-qwen", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };

describe("messagesToHub", () => {
  test("string content and generation settings", () => {
    const hub = messagesToHub({
      ...minimal,
      system: "be brief",
      temperature: 0.2,
      top_p: 0.9,
      top_k: 20,
      stop_sequences: ["END"],
      stream: false,
    });
    expect(hub).toEqual({
      model: "ura-qwen",
      messages: [
        { role: "system", content: [{ type: "text", text: "be brief" }] },
        { role: "user", content: [{ type: "text", text: "hi" }] },
      ],
      tools: [],
      maxOutputTokens: 100,
      temperature: 0.2,
      topP: 0.9,
      topK: 20,
      stop: ["END"],
      ignored: [],
    });
  });

  test("tool_choice maps to the hub, disable_parallel_tool_use turns parallel calls off", () => {
    const tools = [{ name: "t", input_schema: { type: "object" } }];
    const at = (tool_choice: unknown) => messagesToHub({ ...minimal, tools, tool_choice });
    expect(at({ type: "auto" }).toolChoice).toBe("auto");
    expect(at({ type: "any" }).toolChoice).toBe("required");
    expect(at({ type: "none" }).toolChoice).toBe("none");
    expect(at({ type: "tool", name: "t" }).toolChoice).toEqual({ name: "t" });
    expect(at({ type: "auto" }).parallelToolCalls).toBeUndefined();
    expect(at({ type: "any", disable_parallel_tool_use: true }).parallelToolCalls).toBe(false);
    expect(at({ type: "auto" }).tools).toEqual([
      { name: "t", description: "", parameters: { type: "object" } },
    ]);
  });

  test("history: tool_use ids kept verbatim, tool results first, then the user's own text; thinking not forwarded", () => {
    const hub = messagesToHub({
      ...minimal,
      messages: [
        { role: "user", content: "go" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "hmm", signature: "sig" },
            { type: "text", text: "calling" },
            { type: "tool_use", id: "call_abc", name: "mcp__ura__record", input: { nonce: "n1" } },
            { type: "tool_use", id: "call_def", name: "mcp__ura__record", input: { nonce: "n1" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_abc", content: "ok" },
            {
              type: "tool_result",
              tool_use_id: "call_def",
              is_error: true,
              content: [{ type: "text", text: "bad" }],
            },
            { type: "text", text: "continue" },
          ],
        },
        { role: "assistant", content: [{ type: "redacted_thinking", data: "xx" }] },
      ],
    });
    expect(hub.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "go" }] },
      {
        role: "assistant",
        text: "calling",
        toolCalls: [
          hubToolCall("call_abc", "mcp__ura__record", '{"nonce":"n1"}', "messages[1].content[2]"),
          hubToolCall("call_def", "mcp__ura__record", '{"nonce":"n1"}', "messages[1].content[3]"),
        ],
      },
      hubToolResult("call_abc", "mcp__ura__record", "ok", "messages[2].content[0]"),
      hubToolResult("call_def", "mcp__ura__record", "bad", "messages[2].content[1]", { isError: true }),
      { role: "user", content: [{ type: "text", text: "continue" }] },
    ]);
    expect(hub.ignored).toEqual([
      "messages[1].content[0]: thinking block (history thinking is not forwarded)",
      "messages[3].content[0]: redacted_thinking block (history thinking is not forwarded)",
      "messages[3]: assistant message with nothing but thinking (not forwarded)",
    ]);
  });

  test("a user image (base64) becomes a hub image part", () => {
    const hub = messagesToHub({
      ...minimal,
      messages: [
        {
          role: "user",
          content: [
            { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
            { type: "text", text: "what?" },
          ],
        },
      ],
    });
    expect(hub.messages[0]).toEqual({
      role: "user",
      content: [
        { type: "image", mediaType: "image/png", data: "AAAA", source: "messages[0].content[0].source" },
        { type: "text", text: "what?" },
      ],
    });
  });

  const refusals: [string, Record<string, unknown>, string][] = [
    ["unknown top-level field", { ...minimal, service_tier: "auto" }, "service_tier"],
    ["two unknown fields", { ...minimal, container: "c", mcp_servers: [] }, "container, mcp_servers"],
    [
      "unknown block field",
      { ...minimal, messages: [{ role: "user", content: [{ type: "text", text: "x", extra: 1 }] }] },
      "messages[0].content[0].extra",
    ],
    [
      "unknown block type",
      { ...minimal, messages: [{ role: "user", content: [{ type: "document", source: {} }] }] },
      "messages[0].content[0].type",
    ],
    [
      "url image source",
      {
        ...minimal,
        messages: [
          { role: "user", content: [{ type: "image", source: { type: "url", url: "https://x/y.png" } }] },
        ],
      },
      "messages[0].content[0].source.type",
    ],
    [
      "url image inside a tool_result",
      {
        ...minimal,
        messages: [
          { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "t", input: {} }] },
          {
            role: "user",
            content: [
              {
                type: "tool_result",
                tool_use_id: "c1",
                content: [{ type: "image", source: { type: "url", url: "https://x" } }],
              },
            ],
          },
        ],
      },
      "messages[1].content[0].content[0].source.type",
    ],
    [
      "server tool",
      { ...minimal, tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 3 }] },
      "tools[0].type",
    ],
    [
      "bash server tool",
      {
        ...minimal,
        tools: [
          { name: "t", input_schema: {} },
          { type: "bash_20250124", name: "bash" },
        ],
      },
      "tools[1].type",
    ],
    [
      "unknown tool field",
      { ...minimal, tools: [{ name: "t", input_schema: {}, strict: true }] },
      "tools[0].strict",
    ],
    [
      "duplicate tool name",
      {
        ...minimal,
        tools: [
          { name: "t", input_schema: {} },
          { name: "t", input_schema: {} },
        ],
      },
      "tools[1].name",
    ],
    [
      "tool_result for an unknown id",
      { ...minimal, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "nope" }] }] },
      "messages[0].content[0].tool_use_id",
    ],
    ["unknown metadata key", { ...minimal, metadata: { user_id: "u", team: "x" } }, "metadata.team"],
    ["missing max_tokens", { model: "m", messages: [] }, "max_tokens"],
    ["unknown tool_choice", { ...minimal, tool_choice: { type: "web" } }, "tool_choice.type"],
    [
      "unknown output_config field",
      { ...minimal, output_config: { effort: "low", task_budget: 3 } },
      "output_config.task_budget",
    ],
  ];
  for (const [name, body, param] of refusals) {
    test(`400 naming the field: ${name}`, () => {
      const error = errorOf(() => messagesToHub(body));
      expect(error.kind).toBe("invalid_request");
      expect(error.status).toBe(400);
      expect(error.param).toBe(param);
      expect(error.message).toContain(param.split(", ")[0] as string);
    });
  }

  test("the server tool refusal names the tool", () => {
    const error = errorOf(() =>
      messagesToHub({ ...minimal, tools: [{ type: "web_search_20250305", name: "web_search" }] }),
    );
    expect(error.message).toContain("web_search_20250305");
    expect(error.message).toContain('"web_search"');
  });

  test("a non-object body is refused", () => {
    expect(errorOf(() => messagesToHub([1, 2])).kind).toBe("invalid_request");
  });
});

describe("tool search: deferred tools (defer_loading) and tool_reference", () => {
  const observe = {
    name: "mcp__ura__observe",
    description: "Look.",
    input_schema: { type: "object", properties: { camera: { type: "string" } } },
    defer_loading: true,
  };
  const search = { name: "ToolSearch", input_schema: { type: "object" } };
  const placeholder = {
    name: "DeferredToolPlaceholder",
    input_schema: { type: "object" },
    defer_loading: true,
  };
  const searched = (content: unknown[]) => [
    { role: "user", content: "look" },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "s1", name: "ToolSearch", input: { query: "q" } }],
    },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "s1", content }] },
  ];

  test("a deferred tool no reference loaded is not offered upstream, and the record says so", () => {
    const hub = messagesToHub({ ...minimal, tools: [search, placeholder, observe] });
    expect(hub.tools.map((t) => t.name)).toEqual(["ToolSearch"]);
    expect(hub.ignored).toEqual([
      "tools[1] (DeferredToolPlaceholder): defer_loading, and no tool_reference in the history loads it: not offered upstream",
      "tools[2] (mcp__ura__observe): defer_loading, and no tool_reference in the history loads it: not offered upstream",
    ]);
  });

  test("defer_loading: false is an ordinary tool", () => {
    const hub = messagesToHub({ ...minimal, tools: [{ ...observe, defer_loading: false }] });
    expect(hub.tools.map((t) => t.name)).toEqual(["mcp__ura__observe"]);
    expect(hub.ignored).toEqual([]);
  });

  test("a tool_reference loads the tool it names and reads as that tool's definition", () => {
    const hub = messagesToHub({
      ...minimal,
      tools: [search, placeholder, observe],
      messages: searched([{ type: "tool_reference", tool_name: "mcp__ura__observe" }]),
    });
    expect(hub.tools.map((t) => t.name)).toEqual(["ToolSearch", "mcp__ura__observe"]);
    expect(hub.messages.at(-1)).toEqual({
      role: "tool",
      toolCallId: "s1",
      name: "ToolSearch",
      content: [
        {
          type: "text",
          text: `<functions>\n<function>${JSON.stringify({ description: "Look.", name: "mcp__ura__observe", parameters: observe.input_schema })}</function>\n</functions>`,
        },
      ],
      source: "messages[2].content[0]",
    });
    expect(hub.ignored).toEqual([
      "tools[1] (DeferredToolPlaceholder): defer_loading, and no tool_reference in the history loads it: not offered upstream",
    ]);
  });

  test("a reference to a tool the request does not declare reads as unavailable and is recorded", () => {
    const hub = messagesToHub({
      ...minimal,
      tools: [search],
      messages: searched([{ type: "tool_reference", tool_name: "mcp__gone__tool" }]),
    });
    expect(hub.tools.map((t) => t.name)).toEqual(["ToolSearch"]);
    const last = hub.messages.at(-1);
    expect(last?.role === "tool" && last.content).toEqual([
      { type: "text", text: "Tool mcp__gone__tool is not declared in this request; it cannot be called." },
    ]);
    expect(hub.ignored).toEqual([
      "messages[2].content[0].content[0]: tool_reference to undeclared tool mcp__gone__tool",
    ]);
  });

  test("tool_choice naming a deferred tool that nothing loaded is refused, naming the field", () => {
    const error = errorOf(() =>
      messagesToHub({
        ...minimal,
        tools: [observe],
        tool_choice: { type: "tool", name: "mcp__ura__observe" },
      }),
    );
    expect(error).toMatchObject({ kind: "invalid_request", param: "tool_choice.name" });
    expect(error.message).toContain("defer_loading");
  });

  test("a tool_addition block (mid-conversation tool changes) is refused, naming the block's field", () => {
    const error = errorOf(() =>
      messagesToHub({
        ...minimal,
        messages: [
          { role: "user", content: "hi" },
          {
            role: "system",
            content: [
              { type: "text", text: "tools changed" },
              { type: "tool_addition", tool: { type: "tool_reference", name: "mcp__ura__observe" } },
            ],
          },
        ],
      }),
    );
    expect(error).toMatchObject({ kind: "invalid_request", param: "messages[1].content[1].tool" });
  });

  test("a bad tool_reference is refused, naming the field", () => {
    const error = errorOf(() =>
      messagesToHub({ ...minimal, tools: [search], messages: searched([{ type: "tool_reference" }]) }),
    );
    expect(error.param).toBe("messages[2].content[0].content[0].tool_name");
  });

  test("a repeated tool list with the same deferred tools gives the same offered list every turn", () => {
    const repeated = createRepeatedMembers(["tools"]);
    // Long enough to be kept as a repeated member (short ones are parsed afresh).
    const long = { ...search, description: "Find deferred tools. ".repeat(60) };
    const text = (messages: unknown[]) =>
      JSON.stringify({ ...minimal, tools: [long, placeholder, observe], messages });
    const first = toHub(parseJsonBody(text([{ role: "user", content: "a" }]), repeated)).hub;
    const later = toHub(parseJsonBody(text([{ role: "user", content: "b" }]), repeated)).hub;
    expect(Object.isFrozen(later.tools)).toBe(true);
    expect(later.tools).toBe(first.tools);
    const loaded = toHub(
      parseJsonBody(text(searched([{ type: "tool_reference", tool_name: "mcp__ura__observe" }])), repeated),
    ).hub;
    expect(loaded.tools.map((t) => t.name)).toEqual(["ToolSearch", "mcp__ura__observe"]);
  });
});

describe("a tool list resent unchanged (Claude Code's, every turn)", () => {
  const request = JSON.parse(
    readFileSync(
      resolve(import.meta.dir, "../../../fixtures/messages/main-turn/client-request.json"),
      "utf8",
    ),
  ) as { tools: { name: string }[] } & Record<string, unknown>;
  const translate = (text: string, repeated?: RepeatedMembers) => toHub(parseJsonBody(text, repeated)).hub;

  test("each later turn translates, measures and serialises exactly as a fresh request", () => {
    const repeated = createRepeatedMembers(["tools", "system"]);
    const first = translate(JSON.stringify(request), repeated);
    const laterText = JSON.stringify({
      ...request,
      messages: [...(request.messages as unknown[]), { role: "assistant", content: "done" }],
    });
    const later = translate(laterText, repeated);
    expect(later.tools).toBe(first.tools);
    // The resent system prompt is one frozen hub message, the same object every turn.
    expect(later.messages[0]).toBe(first.messages[0] as (typeof later.messages)[0]);
    expect(Object.isFrozen(later.messages[0])).toBe(true);
    const chat = expectAsFresh(later, translate(laterText), repeated.memos);
    expect(stringifyReusingMembers(chat)).toBe(JSON.stringify(chat));
  });

  test("a growing history (its items reused, frozen) translates, measures and serialises as a fresh request", () => {
    const repeated = createRepeatedMembers(["tools", "system"], "messages");
    const messages = [...(request.messages as unknown[])];
    const grow = (n: number) => [
      {
        role: "assistant",
        content: [
          { type: "text", text: `step ${n}` },
          { type: "tool_use", id: `toolu_${n}`, name: "Bash", input: { command: `ls ${n}` } },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${n}`, content: `out ${n}` }] },
    ];
    for (let turn = 0; turn < 6; turn++) {
      // Turn 4 edits an earlier item (a client compacting): the items from there are parsed afresh.
      if (turn === 4)
        messages[2] = {
          role: "assistant",
          content: [
            { type: "text", text: "summary" },
            { type: "tool_use", id: "toolu_0", name: "Bash", input: { command: "ls 0" } },
          ],
        };
      const text = JSON.stringify({ ...request, messages });
      expectAsFresh(translate(text, repeated), translate(text), repeated.memos);
      messages.push(...grow(turn));
    }
    expect(repeated.items?.length).toBe(messages.length - 2);
  });

  test("a bad field beside the repeated tools, or a bad tool in a changed list, is named as in a fresh request", () => {
    const repeated = createRepeatedMembers(["tools"]);
    const first = translate(JSON.stringify(request), repeated);
    const cases = [
      { ...request, max_tokens: 0 },
      { ...request, unknown_field: 1 },
      {
        ...request,
        messages: [{ role: "user", content: [{ type: "image", source: { type: "url", url: "u" } }] }],
      },
      { ...request, tools: [...request.tools, { ...request.tools[0] }] },
      { ...request, tools: [{ type: "web_search_20250305", name: "web_search" }, ...request.tools] },
    ];
    for (const body of cases) {
      const text = JSON.stringify(body);
      const reused = errorOf(() => translate(text, repeated));
      const fresh = errorOf(() => translate(text));
      if (body.tools === request.tools) {
        const parsed = parseJsonBody(text, repeated) as { value: { tools: unknown } };
        expect(toHub(parseJsonBody(JSON.stringify(request), repeated)).hub.tools).toBe(first.tools);
        expect(repeated.memos.isRepeated(parsed.value.tools)).toBe(true);
      }
      expect({ param: reused.param, message: reused.message }).toEqual({
        param: fresh.param,
        message: fresh.message,
      });
    }
  });
});
