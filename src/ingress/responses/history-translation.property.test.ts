/**
 * A growing Responses history (`input`) translated with the episode's memos (its resent
 * items reused, frozen; a plain text message translated once, to-hub.ts) gives, turn after
 * turn and whatever the client did to it, exactly what a fresh request gives; a function
 * call after a message translated once joins a copy of it, never the kept one.
 */
import { describe, test } from "bun:test";
import fc from "fast-check";
import { expectGrowingHistoryAsFresh } from "../../../test/support/growing-history-kit.ts";
import { createResponseStore } from "./stored-responses.ts";
import { toHub } from "./to-hub.ts";

type Item = Record<string, unknown>;

const text = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('quote " \\ ☕', "a\nb", ""));
const role = fc.constantFrom("user", "assistant", "developer");
const part = (r: string) =>
  text.map((t) => ({ type: r === "assistant" ? "output_text" : "input_text", text: t }));

/**
 * An assistant turn's calls (one to three, after an assistant message or not, some in a
 * namespace), then their outputs or not.
 */
const callRun: fc.Arbitrary<Item[]> = fc
  .tuple(
    fc.array(fc.tuple(fc.nat({ max: 3 }), text, fc.boolean()), { minLength: 1, maxLength: 3 }),
    fc.option(text, { nil: undefined }),
    fc.boolean(),
  )
  .map(([calls, said, answered]): Item[] => [
    ...(said === undefined ? [] : [{ type: "message", role: "assistant", content: said }]),
    ...calls.map(([n, , spaced]) => ({
      type: "function_call",
      call_id: `call_${n}`,
      name: "shell",
      ...(n === 3 ? { namespace: "mcp__ura" } : {}),
      arguments: spaced ? `{ "n": ${n} }` : `{"n":${n}}`,
    })),
    ...(answered
      ? calls.map(([n, output]) => ({
          type: "function_call_output",
          call_id: `call_${n}`,
          output: n % 2 === 0 ? output : [{ type: "input_text", text: output }],
        }))
      : []),
  ]);

/** One turn's new items: a message (text as a string or parts), a call and its output, a reasoning item. */
const newItems: fc.Arbitrary<Item[]> = fc.oneof(
  fc.tuple(role, text).map(([r, t]): Item[] => [{ type: "message", role: r, content: t }]),
  role.chain((r) =>
    fc.array(part(r), { maxLength: 3 }).map((content): Item[] => [{ type: "message", role: r, content }]),
  ),
  { arbitrary: callRun, weight: 2 },
  fc.constant(null).map((): Item[] => [{ type: "reasoning", id: "rs_1", summary: [] }]),
);

const ctx = { createdAt: 0, now: () => 0, newResponseId: () => "resp_test", store: createResponseStore };

describe("a growing Responses history, translated with the episode's memos", () => {
  test("translates, measures and serialises as a fresh request on every turn", () => {
    expectGrowingHistoryAsFresh({
      repeated: { members: ["tools"], history: "input" },
      first: [{ type: "message", role: "user", content: "start" }],
      newItems,
      body: (input) => ({ model: "m", input, store: false }),
      translate: (body) => toHub(body, ctx).hub,
    });
  });
});
