import { describe, expect, test } from "bun:test";
import { hubRequestSchema } from "../hub/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import { buildChatRequest } from "./build-chat-request.ts";

const target = { model: "qwen3-vl-plus", imageInput: true, parallelToolCalls: true };
const png = { type: "image" as const, mediaType: "image/png", data: "iVBORw0KGgo=" };

const request = hubRequestSchema.parse({
  model: "client-model",
  messages: [
    { role: "system", content: [{ type: "text", text: "be a robot" }] },
    { role: "user", content: [{ type: "text", text: "go" }] },
    {
      role: "assistant",
      text: null,
      toolCalls: [
        { id: "c1", name: "ura_observe", arguments: "{}" },
        { id: "c2", name: "ura_observe", arguments: "{}" },
      ],
    },
    {
      role: "tool",
      toolCallId: "c1",
      name: "ura_observe",
      content: [{ type: "text", text: "nonce: n1" }, png],
    },
    { role: "tool", toolCallId: "c2", name: "ura_observe", content: [png] },
    { role: "assistant", text: "done", toolCalls: [] },
  ],
  tools: [{ name: "ura_observe", description: "look", parameters: { type: "object" } }],
});

describe("buildChatRequest", () => {
  test("non-thinking, streamed with usage, upstream model from the episode, parallel_tool_calls explicit", () => {
    const chat = buildChatRequest(request, target);
    expect(chat.model).toBe("qwen3-vl-plus");
    expect(chat.enable_thinking).toBe(false);
    expect(chat.stream_options).toEqual({ include_usage: true });
    expect(chat.parallel_tool_calls).toBe(true);
    expect(chat.tools?.[0]?.function.name).toBe("ura_observe");
  });

  test("tool-result images go into one user message right after the batch's tool messages, labelled by call", () => {
    const chat = buildChatRequest(request, target);
    expect(chat.messages.map((m) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "tool",
      "user",
      "assistant",
    ]);
    const tool1 = chat.messages[3] as { content: string };
    expect(tool1.content).toContain("nonce: n1");
    expect(tool1.content).toContain("follow in the next user message");
    const images = chat.messages[5] as {
      content: { type: string; text?: string; image_url?: { url: string } }[];
    };
    expect(images.content.map((p) => p.type)).toEqual(["text", "image_url", "text", "image_url"]);
    expect(images.content[0]?.text).toContain("c1");
    expect(images.content[2]?.text).toContain("c2");
    expect(images.content[1]?.image_url?.url).toBe("data:image/png;base64,iVBORw0KGgo=");
    expect(JSON.stringify(chat.messages.filter((m) => m.role === "tool"))).not.toContain("image_url");
  });

  test("an image for a text-only model is an explicit error naming where it was, never dropped", () => {
    try {
      buildChatRequest(request, { ...target, imageInput: false });
      throw new Error("expected an error");
    } catch (error) {
      expect(error).toBeInstanceOf(SidecarError);
      expect((error as SidecarError).param).toBe("messages[3].content[1]");
      expect((error as SidecarError).status).toBe(400);
    }
  });

  test("generation settings map to Chat Completions names", () => {
    const chat = buildChatRequest(
      {
        ...request,
        maxOutputTokens: 99,
        temperature: 0.2,
        topP: 0.9,
        topK: 5,
        stop: ["END"],
        toolChoice: { name: "ura_observe" },
      },
      target,
    );
    expect(chat).toMatchObject({
      max_tokens: 99,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 5,
      stop: ["END"],
      tool_choice: { type: "function", function: { name: "ura_observe" } },
    });
  });
});

describe("buildChatRequest max_tokens cap", () => {
  test("a client max above upstream.max_output_tokens is lowered, below it kept", () => {
    expect(
      buildChatRequest({ ...request, maxOutputTokens: 32000 }, { ...target, maxOutputTokens: 8192 })
        .max_tokens,
    ).toBe(8192);
    expect(
      buildChatRequest({ ...request, maxOutputTokens: 100 }, { ...target, maxOutputTokens: 8192 }).max_tokens,
    ).toBe(100);
  });
});
