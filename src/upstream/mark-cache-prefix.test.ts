import { describe, expect, test } from "bun:test";
import { parseJsonBody } from "../body/parse-json-body.ts";
import type { HubMessage, HubRequest } from "../hub/schema.ts";
import { toHub } from "../ingress/messages/to-hub.ts";
import { createContextCache } from "../scripted-upstream/emulate-context-cache.ts";
import { buildChatRequest } from "./build-chat-request.ts";
import type { ChatMessage } from "./chat-schema.ts";
import { cacheMarkerReserveBytes, markCachePrefix, unmarkCachePrefix } from "./mark-cache-prefix.ts";
import { listPromptBlocks } from "./prompt-blocks.ts";

const target = { model: "qwen3.5-plus", imageInput: true, parallelToolCalls: true, cacheMarkers: true };

/** A camera history: `turns` turns of `callsPerTurn` calls, each result a line of text and a frame. */
function history(turns: number, callsPerTurn = 1): HubRequest {
  const messages: HubMessage[] = [
    { role: "system", content: [{ type: "text", text: "You watch a table through the robot's camera." }] },
    { role: "user", content: [{ type: "text", text: "Observe on every turn." }] },
  ];
  for (let t = 0; t < turns; t++) {
    const ids = Array.from({ length: callsPerTurn }, (_, c) => `call_${t}_${c}`);
    messages.push({
      role: "assistant",
      text: null,
      toolCalls: ids.map((id) => ({ id, name: "observe", arguments: "{}" })),
    });
    for (const id of ids)
      messages.push({
        role: "tool",
        toolCallId: id,
        name: "observe",
        content: [
          { type: "text", text: `observation ${id}` },
          { type: "image", mediaType: "image/webp", data: `FRAME${id}` },
        ],
      });
  }
  return {
    model: "m",
    messages,
    tools: [{ name: "observe", description: "Take a picture", parameters: { type: "object" } }],
    ignored: [],
  };
}

const messagesToHub = (body: object) => toHub(parseJsonBody(JSON.stringify(body))).hub;
const markersOf = (messages: ChatMessage[]) => listPromptBlocks({ messages }).filter((b) => b.marked);

describe("explicit cache markers", () => {
  test("turn after turn: at most 4, never on an assistant message, each with ≥ 1024 tokens before it; every turn after the first hits the previous one's entry", () => {
    const cache = createContextCache();
    for (let turns = 1; turns <= 40; turns++) {
      const chat = buildChatRequest(history(turns), target);
      const blocks = listPromptBlocks(chat);
      const marked = blocks.flatMap((b, i) => (b.marked ? [i] : []));
      expect(marked.length).toBeLessThanOrEqual(4);
      let tokens = 0;
      const before = blocks.map((b) => (tokens += b.tokens));
      for (const i of marked) {
        const block = blocks[i];
        expect(chat.messages[block?.message ?? -1]?.role).not.toBe("assistant");
        expect(before[i]).toBeGreaterThanOrEqual(1024);
      }
      const account = cache.account("k", blocks);
      if (marked.length > 0 && turns > 1) {
        const previous = listPromptBlocks(buildChatRequest(history(turns - 1), target));
        if (previous.some((b) => b.marked))
          expect({ turns, cached: account.cachedTokens }).toEqual({
            turns,
            cached: previous.reduce((sum, b) => sum + b.tokens, 0),
          });
      }
      account.commit();
    }
  });

  test("a turn that adds more than 20 blocks still finds the previous entry (the markers further back)", () => {
    const cache = createContextCache();
    const first = buildChatRequest(history(3, 4), target);
    cache.account("k", listPromptBlocks(first)).commit();
    // One more turn of 12 calls: 1 + 12 + 24 blocks, far more than the 20-block look-back.
    const base = history(3, 4);
    const grown = { ...base, messages: [...base.messages, ...history(4, 12).messages.slice(-13)] };
    const blocks = listPromptBlocks(buildChatRequest(grown, target));
    expect(blocks.length - listPromptBlocks(first).length).toBeGreaterThan(20);
    const account = cache.account("k", blocks);
    expect(account.cachedTokens).toBe(listPromptBlocks(first).reduce((sum, b) => sum + b.tokens, 0));
  });

  test("markers already on the messages beyond the chosen ones are removed; unmark restores the messages", () => {
    const chat = buildChatRequest(history(30), { ...target, cacheMarkers: false });
    const marker = { type: "ephemeral" as const };
    const preMarked = chat.messages.map((message) =>
      message.role === "user" && Array.isArray(message.content)
        ? { ...message, content: message.content.map((part) => ({ ...part, cache_control: marker })) }
        : message,
    );
    expect(markersOf(preMarked).length).toBeGreaterThan(4);
    const marked = markCachePrefix(preMarked, chat.tools);
    expect(markersOf(marked).length).toBeLessThanOrEqual(4);
    const plain = markCachePrefix(chat.messages, chat.tools);
    expect(unmarkCachePrefix(plain as Record<string, unknown>[])).toEqual(
      chat.messages as Record<string, unknown>[],
    );
  });

  test("the markers add at most cacheMarkerReserveBytes to the body; without the capability there are none", () => {
    for (const turns of [1, 5, 30]) {
      const plain = JSON.stringify(buildChatRequest(history(turns), { ...target, cacheMarkers: false }));
      const marked = JSON.stringify(buildChatRequest(history(turns), target));
      expect(marked.length - plain.length).toBeLessThanOrEqual(cacheMarkerReserveBytes);
      expect(plain).not.toContain("cache_control");
    }
  });
});

describe("Claude Code's own cache_control", () => {
  test("the system prompt and the newest message it marked get the markers, within the rules", () => {
    const system = "You are a robot operator. ".repeat(300);
    const body = {
      model: "ura-qwen",
      max_tokens: 1024,
      system: [{ type: "text", text: system, cache_control: { type: "ephemeral" } }],
      messages: [
        { role: "user", content: [{ type: "text", text: "Look at the table." }] },
        { role: "assistant", content: [{ type: "text", text: "I see a cup." }] },
        {
          role: "user",
          content: [{ type: "text", text: "And now?", cache_control: { type: "ephemeral" } }],
        },
        { role: "assistant", content: [{ type: "text", text: "Still a cup." }] },
        { role: "user", content: [{ type: "text", text: "Thanks." }] },
      ],
    };
    const hub = messagesToHub(body);
    expect(hub.messages.filter((m) => "cacheHint" in m && m.cacheHint).map((m) => m.role)).toEqual([
      "system",
      "user",
    ]);
    const chat = buildChatRequest(hub, target);
    const marked = listPromptBlocks(chat)
      .filter((b) => b.marked)
      .map((b) => b.message);
    // The last message (the sidecar's own choice), then the client's: its user message and its system prompt.
    expect(marked.sort()).toEqual([0, 3, 5]);
    expect(chat.messages[0]).toEqual({
      role: "system",
      content: [{ type: "text", text: system, cache_control: { type: "ephemeral" } }],
    });
    // Without the capability the hints go nowhere.
    expect(JSON.stringify(buildChatRequest(hub, { ...target, cacheMarkers: false }))).not.toContain(
      "cache_control",
    );
  });
});
