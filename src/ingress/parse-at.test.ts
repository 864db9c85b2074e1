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

const schema = z.strictObject({
  model: z.string(),
  messages: z.array(
    z.strictObject({
      role: z.enum(["user", "assistant"]),
      content: z.union([z.string(), z.array(z.strictObject({ type: z.literal("text"), text: z.string() }))]),
    }),
  ),
  stream: z.boolean().optional(),
});

const validate = (text: string, repeated?: ReturnType<typeof createRepeatedMembers>) => {
  const body = parseJsonBody(text, repeated);
  if (!body.parsed) throw new Error(body.reason);
  return parseRequestAt(schema, body.value as Record<string, unknown>, "");
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
  test("reuses what validation made of the repeated items", () => {
    const repeated = createRepeatedMembers([], "messages");
    const first = validate(
      JSON.stringify({ model: "m", messages: [{ role: "user", content: "a" }] }),
      repeated,
    );
    const later = validate(
      JSON.stringify({
        model: "m",
        messages: [
          { role: "user", content: "a" },
          { role: "assistant", content: "b" },
        ],
      }),
      repeated,
    );
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
        (turns, model) => {
          const repeated = createRepeatedMembers([], "messages");
          let messages: unknown[] = [];
          for (const added of turns) {
            messages = [...messages, ...added];
            const text = JSON.stringify({ model: turns.length % 2 ? "m" : model, messages });
            expect(outcome(() => validate(text, repeated))).toEqual(outcome(() => validate(text)));
            // A client moves on only from a history the sidecar took.
            if ("error" in outcome(() => validate(text)))
              messages = messages.slice(0, messages.length - added.length);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
