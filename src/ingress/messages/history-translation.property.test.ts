/**
 * A growing Messages history translated with the episode's memos (its resent items
 * reused, frozen; a plain text message translated once, to-hub.ts) gives, turn after
 * turn and whatever the client did to its history, exactly what a fresh request gives:
 * the same hub request or the same error, the same measured size, the same upstream text.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { chatTarget } from "../../../test/support/hub-kit.ts";
import { createRepeatedMembers, parseJsonBody } from "../../body/parse-json-body.ts";
import { measureMessageBytes, measureRequestBytes } from "../../context/estimate.ts";
import { SidecarError } from "../../lib/errors.ts";
import { stringifyKnowingMembers } from "../../lib/frozen-json.ts";
import { buildChatRequest } from "../../upstream/build-chat-request.ts";
import { toHub } from "./to-hub.ts";

type Message = { role: "user" | "assistant"; content: unknown };

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

/** One turn's new items: plain or noted text, thinking only, or a tool call and its result. */
const newItems: fc.Arbitrary<Message[]> = fc.oneof(
  fc.record({ role: fc.constantFrom("user" as const, "assistant" as const), content: text }).map((m) => [m]),
  fc
    .record({
      role: fc.constantFrom("user" as const, "assistant" as const),
      content: fc.array(textBlock, { maxLength: 3 }),
    })
    .map((m) => [m]),
  fc
    .constant(null)
    .map((): Message[] => [
      { role: "assistant", content: [{ type: "thinking", thinking: "t", signature: "s" }] },
    ]),
  fc.tuple(fc.nat({ max: 5 }), text).map(([id, output]) => [
    {
      role: "assistant" as const,
      content: [{ type: "tool_use", id: `toolu_${id}`, name: "Bash", input: { c: id } }],
    },
    {
      role: "user" as const,
      content: [{ type: "tool_result", tool_use_id: `toolu_${id}`, content: output }],
    },
  ]),
);

const change = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("append" as const), items: newItems }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant("edit" as const), at: fc.nat(), to: newItems }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("drop" as const), at: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("compact" as const), keep: fc.nat() }), weight: 1 },
);
type Change = typeof change extends fc.Arbitrary<infer C> ? C : never;

function apply(history: Message[], c: Change): Message[] {
  const items = [...history];
  if (c.kind === "append") return [...items, ...c.items];
  if (items.length === 0) return items;
  const at = c.kind === "compact" ? 0 : c.at % items.length;
  if (c.kind === "edit") items.splice(at, 1, ...c.to);
  else if (c.kind === "drop") items.splice(at, 1);
  else return items.slice(items.length - (c.keep % (items.length + 1)));
  return items;
}

function outcome(run: () => unknown): unknown {
  try {
    return run();
  } catch (error) {
    if (!(error instanceof SidecarError)) throw error;
    return { param: error.param, message: error.message };
  }
}

describe("a growing Messages history, translated with the episode's memos", () => {
  test("translates, measures and serialises as a fresh request on every turn", () => {
    fc.assert(
      fc.property(fc.array(change, { minLength: 1, maxLength: 10 }), (changes) => {
        const repeated = createRepeatedMembers(["tools", "system"], "messages");
        let history: Message[] = [{ role: "user", content: "start" }];
        for (const c of changes) {
          history = apply(history, c);
          const sent = JSON.stringify({ model: "m", max_tokens: 100, system: "be brief", messages: history });
          const reused = outcome(() => toHub(parseJsonBody(sent, repeated)).hub);
          const fresh = outcome(() => toHub(parseJsonBody(sent)).hub);
          expect(reused).toEqual(fresh);
          expect(JSON.stringify(reused)).toBe(JSON.stringify(fresh));
          if (!(typeof reused === "object" && reused !== null && "messages" in reused)) continue;
          const hub = reused as ReturnType<typeof toHub>["hub"];
          const freshHub = fresh as typeof hub;
          expect(measureRequestBytes(hub, repeated.memos)).toBe(measureRequestBytes(freshHub));
          hub.messages.forEach((message, i) => {
            expect(measureMessageBytes(message, repeated.memos)).toBe(
              measureMessageBytes(freshHub.messages[i] as typeof message),
            );
          });
          const chat = buildChatRequest(hub, chatTarget, repeated.memos);
          const { text: upstream, known } = stringifyKnowingMembers(chat, repeated.memos);
          expect(upstream).toBe(JSON.stringify(buildChatRequest(freshHub, chatTarget)));
          for (const span of known)
            expect(upstream.slice(span.start, span.end)).toBe(JSON.stringify(span.key));
        }
      }),
      { numRuns: 300 },
    );
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
});
