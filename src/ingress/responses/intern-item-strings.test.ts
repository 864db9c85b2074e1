import { expect, test } from "bun:test";
import { createItemInterner, minInternChars } from "./intern-item-strings.ts";
import { inputItemSchema } from "./schema.ts";

const frame = `data:image/png;base64,${"QUJD".repeat(minInternChars)}`;
const parse = (json: string) => inputItemSchema.array().parse(JSON.parse(json));
const items = JSON.stringify([
  {
    type: "message",
    role: "user",
    content: [
      { type: "input_text", text: "short" },
      { type: "input_image", image_url: frame },
    ],
  },
  { type: "function_call", call_id: "c1", name: "observe", arguments: "{}" },
  {
    type: "function_call_output",
    call_id: "c1",
    output: [{ type: "input_image", image_url: frame, detail: "auto" }],
  },
  { type: "function_call_output", call_id: "c2", output: "x".repeat(minInternChars) },
  { type: "item_reference", id: "fc_1" },
]);

test("interned items equal what was given, field for field, and items it returned are returned as they are", () => {
  const intern = createItemInterner();
  const first = intern(parse(items));
  expect(first).toEqual(parse(items));
  const again = intern(parse(items));
  expect(again).toEqual(parse(items));
  // A chained request's earlier items are the stored objects themselves.
  const chained = intern(first);
  chained.forEach((item, i) => {
    expect(item).toBe(first[i] as (typeof first)[number]);
  });
});
