import { describe, expect, test } from "bun:test";
import { applyEdits } from "./bad-input.ts";

describe("applyEdits", () => {
  test("an inserted value is a copy: editing it later never builds a cycle or changes the edit's value", () => {
    // fast-check hands the same constant object to many edits and runs (constantFrom).
    const shared = {};
    const seed = { model: "m", input: "hi" };
    // Replace `input` (path index 1) with the shared object, then add the shared object as a
    // field of the object now at `input` (object index 1: root first, then `input`).
    const { value } = applyEdits(seed, [
      { op: "replace", at: 1, value: shared },
      { op: "unknown_field", at: 1, key: "self", value: shared },
    ]);
    expect(() => JSON.stringify(value)).not.toThrow();
    expect(value).toEqual({ model: "m", input: { self: {} } });
    expect(shared).toEqual({});
  });
});
