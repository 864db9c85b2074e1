/**
 * Validation of a resent history (parse-at.ts): the items a request repeats from the
 * last one (reused, frozen, by parse-json-body.ts) are not validated again, and a request
 * whose new items are bad gets exactly the error a fresh request gets.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { z } from "zod";
import { createRepeatedMembers, parseJsonBody } from "../body/parse-json-body.ts";
import { SidecarError } from "../lib/errors.ts";
import { parseRequestAt } from "./parse-at.ts";

const message = z.strictObject({
  role: z.enum(["user", "assistant"]),
  content: z.union([z.string(), z.array(z.strictObject({ type: z.literal("text"), text: z.string() }))]),
});
/** The history's three forms: a plain array (Messages), one with a minimum length (Gemini), a union with a string (Responses). */
const schemas = [z.array(message), z.array(message).min(1), z.union([z.string(), z.array(message)])].map(
  (messages) => z.strictObject({ model: z.string(), messages, stream: z.boolean().optional() }),
);
const schema = schemas[0] as (typeof schemas)[0];

const validate = (text: string, repeated?: ReturnType<typeof createRepeatedMembers>, form = schema) => {
  const body = parseJsonBody(text, repeated);
  if (!body.parsed) throw new Error(body.reason);
  return parseRequestAt(form, body.value as Record<string, unknown>, "", body.memos) as z.infer<
    typeof schema
  >;
};

const outcome = (run: () => unknown) => {
  try {
    return { value: JSON.stringify(run()) };
  } catch (error) {
    if (!(error instanceof SidecarError)) throw error;
    return { error: `${error.param}: ${error.message}` };
  }
};

describe("a resent history's validation", () => {
  for (const [i, form] of schemas.entries())
    test(`reuses what validation made of the repeated items (history form ${i + 1})`, () => {
      const repeated = createRepeatedMembers([], "messages");
      const one = { role: "user", content: "a" };
      const first = validate(JSON.stringify({ model: "m", messages: [one] }), repeated, form);
      const two = [one, { role: "assistant", content: "b" }];
      const later = validate(JSON.stringify({ model: "m", messages: two }), repeated, form);
      expect(later.messages[0]).toBe(first.messages[0] as (typeof later.messages)[0]);
      expect(Object.isFrozen(later.messages[0])).toBe(true);
    });

  test("gives the value or the error a fresh request gets, whatever the new items hold", () => {
    const good = fc.record({
      role: fc.constantFrom("user", "assistant"),
      content: fc.string({ maxLength: 5 }),
    });
    const any = fc.oneof(
      good,
      fc.record({ role: fc.constantFrom("user", "system", 3), content: fc.oneof(fc.string(), fc.integer()) }),
      fc.record({ role: fc.constant("user"), content: fc.constant("x"), extra: fc.constant(1) }),
    );
    fc.assert(
      fc.property(
        fc.array(fc.array(any, { maxLength: 3 }), { minLength: 1, maxLength: 6 }),
        fc.oneof(fc.constant("m"), fc.constant(7)),
        fc.constantFrom(...schemas),
        (turns, model, form) => {
          const repeated = createRepeatedMembers([], "messages");
          let messages: unknown[] = [];
          for (const added of turns) {
            messages = [...messages, ...added];
            const text = JSON.stringify({ model: turns.length % 2 ? "m" : model, messages });
            const fresh = outcome(() => validate(text, undefined, form));
            expect(outcome(() => validate(text, repeated, form))).toEqual(fresh);
            // A client moves on only from a history the sidecar took.
            if ("error" in fresh) messages = messages.slice(0, messages.length - added.length);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
