/**
 * A growing Gemini history (`contents`) translated with the episode's memos (its resent
 * contents reused, frozen; a plain text content translated once, convert-contents.ts)
 * gives, turn after turn and whatever the client did to it, exactly what a fresh request gives.
 */
import { describe, test } from "bun:test";
import fc from "fast-check";
import { expectGrowingHistoryAsFresh } from "../../../test/support/growing-history-kit.ts";
import { toHub } from "./to-hub.ts";

type Content = { role: "user" | "model"; parts: Record<string, unknown>[] };

const text = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('quote " \\ ☕', "a\nb", ""));
const textPart = fc.oneof(
  { arbitrary: text.map((t) => ({ text: t })), weight: 4 },
  {
    arbitrary: text.map((t) => ({ text: t, thoughtSignature: "skip_thought_signature_validator" })),
    weight: 1,
  },
);
const role = fc.constantFrom("user" as const, "model" as const);

/** One turn's new contents: text (plain or with a signature), or a call and its response, with or without ids. */
const newItems: fc.Arbitrary<Content[]> = fc.oneof(
  fc.record({ role, parts: fc.array(textPart, { maxLength: 3 }) }).map((c) => [c]),
  fc.tuple(fc.nat({ max: 3 }), fc.boolean(), text).map(([n, withId, output]): Content[] => [
    {
      role: "model",
      parts: [{ functionCall: { name: `f${n}`, args: { n }, ...(withId ? { id: `call_${n}` } : {}) } }],
    },
    {
      role: "user",
      parts: [
        {
          functionResponse: { name: `f${n}`, response: { output }, ...(withId ? { id: `call_${n}` } : {}) },
        },
      ],
    },
  ]),
);

const operation = { kind: "generate" as const, model: "ura-qwen", stream: true, sse: true };

describe("a growing Gemini history, translated with the episode's memos", () => {
  test("translates, measures and serialises as a fresh request on every turn", () => {
    expectGrowingHistoryAsFresh({
      repeated: { members: ["systemInstruction", "tools"], history: "contents" },
      first: [{ role: "user", parts: [{ text: "start" }] }],
      newItems,
      body: (contents) => ({ contents, systemInstruction: { parts: [{ text: "be brief" }] } }),
      translate: (body) => toHub(body, { operation }).hub,
    });
  });
});
