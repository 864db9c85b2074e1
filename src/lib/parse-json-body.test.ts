import { describe, expect, test } from "bun:test";
import { jsonNestingDepth, maxJsonDepth, parseJsonBody } from "./parse-json-body.ts";

describe("parseJsonBody", () => {
  test("parses ordinary JSON", () => {
    const text = '{"a":[1,{"b":"x"}]}';
    expect(parseJsonBody(text)).toEqual({ parsed: true, value: { a: [1, { b: "x" }] }, text });
  });

  test("depth ignores brackets inside strings and escaped quotes", () => {
    expect(jsonNestingDepth('{"a":"[[[{{{\\"[["}')).toBe(1);
    expect(jsonNestingDepth("[[[]],[]]")).toBe(3);
    expect(jsonNestingDepth('[["\\\\",["\\"]"]]')).toBe(3);
    expect(jsonNestingDepth(JSON.stringify([{ a: ["\\", '"]]]', '\\"[', { b: [] }] }]))).toBe(5);
  });

  test("a body nested past the limit is refused with the depth, not parsed", () => {
    const deep = `${"[".repeat(50_000)}${"]".repeat(50_000)}`;
    const result = parseJsonBody(deep);
    expect(result.parsed).toBe(false);
    if (!result.parsed) expect(result.reason).toContain(`limit of ${maxJsonDepth}`);
    expect(parseJsonBody(`${"[".repeat(maxJsonDepth)}${"]".repeat(maxJsonDepth)}`).parsed).toBe(true);
  });

  test("invalid JSON says why", () => {
    const result = parseJsonBody("{nope");
    expect(result.parsed).toBe(false);
    if (!result.parsed) expect(result.reason).toStartWith("request body is not valid JSON");
  });
});
