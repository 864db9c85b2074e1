/**
 * A growing Messages history translated with the episode's memos (its resent items
 * reused, frozen; a plain text message, system ones too, translated once, to-hub.ts) gives, turn after
 * turn and whatever the client did to its history, exactly what a fresh request gives.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { expectGrowingHistoryAsFresh } from "../../../test/support/growing-history-kit.ts";
import { chatTarget } from "../../../test/support/hub-kit.ts";
import { createRepeatedMembers, parseJsonBody } from "../../body/parse-json-body.ts";
import { buildChatRequest } from "../../upstream/build-chat-request.ts";
import { toHub } from "./to-hub.ts";

type Message = { role: "user" | "assistant" | "system"; content: unknown };

const text = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('quote " \\ ☕', "a\nb", ""));
const textBlock = fc.record(
  {
    type: fc.constant("text"),
    text,
    cache_control: fc.constant({ type: "ephemeral" }),
    citations: fc.constantFrom(null, [], [{ cited: 1 }]),
  },
  { requiredKeys: ["type", "text"] },
);
/** Claude Code also sends mid-conversation system messages. */
const role = fc.constantFrom("user" as const, "assistant" as const, "system" as const);

/** One turn's new items: plain or noted text (a user, assistant or system message), thinking only, or a tool call and its result. */
const newItems: fc.Arbitrary<Message[]> = fc.oneof(
  fc.record({ role, content: text }).map((m) => [m]),
  fc.record({ role, content: fc.array(textBlock, { maxLength: 3 }) }).map((m) => [m]),
  fc
    .constant(null)
    .map((): Message[] => [
      { role: "assistant", content: [{ type: "thinking", thinking: "t", signature: "s" }] },
    ]),
  fc
    .tuple(fc.nat({ max: 5 }), text, fc.array(textBlock, { maxLength: 2 }), fc.boolean())
    .map(([id, output, before, marked]): Message[] => [
      {
        role: "assistant",
        content: [
          ...before,
          {
            type: "tool_use",
            id: `toolu_${id}`,
            name: "Bash",
            input: { c: id },
            ...(marked ? { cache_control: { type: "ephemeral" } } : {}),
          },
        ],
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: `toolu_${id}`,
            content: marked ? [{ type: "text", text: output }, ...before] : output,
            ...(before.length === 1 ? { is_error: true } : {}),
          },
        ],
      },
    ]),
);

describe("a growing Messages history, translated with the episode's memos", () => {
  test("translates, measures and serialises as a fresh request on every turn", () => {
    expectGrowingHistoryAsFresh({
      repeated: { members: ["tools", "system"], history: "messages" },
      first: [{ role: "user", content: "start" }],
      newItems,
      body: (messages) => ({ model: "m", max_tokens: 100, system: "be brief", messages }),
      translate: (body) => toHub(body).hub,
    });
  });

  test("a resent plain text message is one frozen hub message and one frozen Chat message", () => {
    const repeated = createRepeatedMembers([], "messages");
    const first = [{ role: "user", content: [{ type: "text", text: "look" }] }];
    const translate = (messages: unknown[]) =>
      toHub(parseJsonBody(JSON.stringify({ model: "m", max_tokens: 9, messages }), repeated)).hub;
    const one = translate(first);
    const two = translate([...first, { role: "assistant", content: "seen" }]);
    expect(two.messages[0]).toBe(one.messages[0] as (typeof two.messages)[0]);
    expect(Object.isFrozen(two.messages[0])).toBe(true);
    const chatOne = buildChatRequest(one, chatTarget, repeated.memos);
    const chatTwo = buildChatRequest(two, chatTarget, repeated.memos);
    expect(chatTwo.messages[0]).toBe(chatOne.messages[0] as (typeof chatTwo.messages)[0]);
  });

  test("a resent assistant message of text and calls is translated once, its calls registered again", () => {
    const repeated = createRepeatedMembers([], "messages");
    const call = {
      role: "assistant",
      content: [
        { type: "text", text: "run" },
        { type: "tool_use", id: "toolu_1", name: "Bash", input: {} },
      ],
    };
    const result = {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "ok" }],
    };
    const translate = (messages: unknown[]) =>
      toHub(parseJsonBody(JSON.stringify({ model: "m", max_tokens: 9, messages }), repeated)).hub;
    const one = translate([{ role: "user", content: "go" }, call, result]);
    const two = translate([{ role: "user", content: "go" }, call, result, { role: "user", content: "next" }]);
    expect(two.messages[1]).toBe(one.messages[1] as (typeof two.messages)[1]);
    expect(Object.isFrozen(two.messages[1])).toBe(true);
    // The tool result still finds its call's name: the kept message's calls were registered.
    expect(two.messages[2]).toMatchObject({ role: "tool", toolCallId: "toolu_1", name: "Bash" });
  });
});
