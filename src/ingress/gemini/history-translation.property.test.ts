/**
 * A growing Gemini history (`contents`) translated with the episode's memos (its resent
 * contents reused, frozen; a plain text content, a model content of text and calls and a
 * user content of function responses translated once, convert-contents.ts; a resent tool
 * list converted once, convert-tools.ts) gives, turn after turn and whatever the client did
 * to it, exactly what a fresh request gives, while the arguments the episode delivered for
 * a call id come and go between turns.
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

/** Gemini CLI's placeholder signature on a turn's first call, or now and then another (refused). */
const signature = fc.oneof(
  { arbitrary: fc.constant(undefined), weight: 2 },
  { arbitrary: fc.constant("skip_thought_signature_validator"), weight: 3 },
  { arbitrary: fc.constant("a-real-signature"), weight: 1 },
);

const call = (n: number, withId: boolean, signed?: string) => ({
  functionCall: { name: `f${n}`, args: { n }, ...(withId ? { id: `call_${n}` } : {}) },
  ...(signed === undefined ? {} : { thoughtSignature: signed }),
});
/** A failed call's error text with a long base64 run in it: its conversion replaces the run and notes it (lift-error-images.ts). */
const base64Error = `failed: ${"QUJD".repeat(80)}`;

const responseOf = (n: number, withId: boolean, output: string, failed: boolean) => ({
  functionResponse: {
    name: `f${n}`,
    response: failed ? { error: n === 3 ? base64Error : output } : { output },
    ...(withId ? { id: `call_${n}` } : {}),
  },
});

/**
 * One or two calls (text before them or not, the first signed as Gemini CLI signs it or
 * not), and their responses in one content, each with or without its id.
 */
const callsAndResponses: fc.Arbitrary<Content[]> = fc
  .tuple(
    fc.array(fc.tuple(fc.nat({ max: 3 }), fc.boolean(), text, fc.boolean()), { minLength: 1, maxLength: 2 }),
    fc.option(text, { nil: undefined }),
    fc.boolean(),
    signature,
  )
  .map(([calls, before, answered, signed]): Content[] => [
    {
      role: "model",
      parts: [
        ...(before === undefined ? [] : [{ text: before }]),
        ...calls.map(([n, id], k) => call(n, id, k === 0 ? signed : undefined)),
      ],
    },
    ...(answered
      ? [
          {
            role: "user" as const,
            parts: calls.map(([n, id, output, failed]) => responseOf(n, id, output, failed)),
          },
        ]
      : []),
  ]);

/** One turn's new contents: text (plain or with a signature), calls and their responses, or a lone response. */
const newItems: fc.Arbitrary<Content[]> = fc.oneof(
  fc.record({ role, parts: fc.array(textPart, { maxLength: 3 }) }).map((c) => [c]),
  { arbitrary: callsAndResponses, weight: 2 },
  fc
    .tuple(fc.nat({ max: 3 }), fc.boolean(), text)
    .map(([n, id, output]): Content[] => [{ role: "user", parts: [responseOf(n, id, output, false)] }]),
);

/**
 * A declaration with an OpenAPI schema and Gemini CLI's scheduling hint (its conversion notes
 * it), long enough for the parse to reuse the resent list (parse-json-body.ts).
 */
const tools = [
  {
    functionDeclarations: [
      {
        name: "f0",
        description: "reads the robot's sensors ".repeat(50),
        parameters: {
          type: "OBJECT",
          properties: { n: { type: "INTEGER", format: "int32" }, wait_for_previous: { type: "BOOLEAN" } },
        },
      },
      { name: "f1", parametersJsonSchema: { type: "object", properties: { n: { type: "integer" } } } },
    ],
  },
];

const operation = { kind: "generate" as const, model: "ura-qwen", stream: true, sse: true };

/** Qwen's own text of a call's arguments (equal to the echoed `{n}`, spaced differently), known on odd turns. */
const deliveredOn = (turn: number) => (id: string) =>
  turn % 2 === 1 && id.startsWith("call_") ? `{ "n": ${id.slice("call_".length)} }` : undefined;

describe("a growing Gemini history, translated with the episode's memos", () => {
  test("translates, measures and serialises as a fresh request on every turn", () => {
    expectGrowingHistoryAsFresh({
      repeated: { members: ["systemInstruction", "tools"], history: "contents" },
      first: [{ role: "user", parts: [{ text: "start" }] }],
      newItems,
      body: (contents) => ({
        contents,
        systemInstruction: { parts: [{ text: "be brief. ".repeat(120) }] },
        tools,
      }),
      translate: (body, turn) => toHub(body, { operation, deliveredArguments: deliveredOn(turn) }).hub,
    });
  });
});
