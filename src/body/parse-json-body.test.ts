import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  createRepeatedMembers,
  jsonNestingDepth,
  type KnownMember,
  maxJsonDepth,
  parseJsonBody,
} from "./parse-json-body.ts";
import { unsplit, wholeText } from "./split-text.ts";

/** A body as parsed without the episode's memos it carries (a fresh parse has none). */
function withoutMemos<T extends object>(body: T): Omit<T, "memos"> {
  const { memos: _, ...rest } = body as T & { memos?: unknown };
  return rest;
}

describe("parseJsonBody", () => {
  test("parses ordinary JSON", () => {
    const text = '{"a":[1,{"b":"x"}]}';
    expect(parseJsonBody(text)).toEqual({
      parsed: true,
      value: { a: [1, { b: "x" }] },
      received: unsplit(text),
    });
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

/** A tool list large enough to be remembered (members under 1 KB are parsed every time). */
const tools = Array.from({ length: 12 }, (_, i) => ({
  name: `tool_${i}`,
  description: `does thing ${i} with "quotes" and [brackets] {braces}`,
  input_schema: { type: "object", properties: { x: { type: "array", items: { type: "number" } } } },
}));
const turn = (messages: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: "m", messages, tools, ...extra });

describe("parseJsonBody with an episode's repeated members", () => {
  test("a member resent byte for byte is the same frozen value, equal to a fresh parse", () => {
    const repeated = createRepeatedMembers(["tools"]);
    const first = parseJsonBody(turn([{ role: "user", content: "a" }]), repeated);
    const secondText = turn([
      { role: "user", content: "a" },
      { role: "assistant", content: "b" },
    ]);
    const second = parseJsonBody(secondText, repeated);
    if (!first.parsed || !second.parsed) throw new Error("not parsed");
    const { known, memos, ...parsed } = second;
    expect(parsed).toEqual(parseJsonBody(secondText) as typeof parsed);
    expect(wholeText(second.received)).toBe(secondText);
    // Where the repeated text lies, for the records: none the first time.
    expect(first.known).toBeUndefined();
    expect(known?.map(({ start, end }) => secondText.slice(start, end))).toEqual([JSON.stringify(tools)]);
    expect(parseJsonBody(secondText, repeated).parsed && parseJsonBody(secondText, repeated)).toMatchObject({
      known: [{ key: known?.[0]?.key }],
    });
    const firstTools = (first.value as { tools: unknown }).tools;
    const secondTools = (second.value as { tools: unknown }).tools;
    expect(secondTools).toBe(firstTools);
    expect(repeated.memos.isRepeated(secondTools)).toBe(true);
    expect(Object.isFrozen((secondTools as { input_schema: object }[])[3]?.input_schema)).toBe(true);
    expect(() => {
      (secondTools as unknown[]).push(1);
    }).toThrow();
  });

  test("a member with a long base64 string is not remembered (it would keep a large request's text alive)", () => {
    const repeated = createRepeatedMembers(["tools"]);
    const withImage = [{ name: "t", description: Buffer.alloc(6000, 1).toString("base64") }];
    const text = JSON.stringify({ model: "m", messages: [], tools: withImage, pad: "x".repeat(1024 * 1024) });
    parseJsonBody(text, repeated);
    const again = parseJsonBody(text, repeated);
    if (!again.parsed) throw new Error("not parsed");
    expect(repeated.memos.isRepeated((again.value as { tools: unknown }).tools)).toBe(false);
    expect(again.value).toEqual((parseJsonBody(text) as typeof again).value);
    expect(wholeText(again.received)).toBe(text);
  });

  test("a changed member is parsed again and remembered instead; other members are never kept", () => {
    const repeated = createRepeatedMembers(["tools"]);
    const first = parseJsonBody(turn([]), repeated);
    const changed = JSON.stringify({ model: "m", messages: [], tools: tools.slice(1) });
    const second = parseJsonBody(changed, repeated);
    if (!first.parsed || !second.parsed) throw new Error("not parsed");
    const secondTools = (second.value as { tools: unknown[] }).tools;
    expect(secondTools).not.toBe((first.value as { tools: unknown }).tools);
    expect(secondTools).toEqual(tools.slice(1));
    expect(repeated.memos.isRepeated((second.value as { messages: unknown }).messages)).toBe(false);
    expect((parseJsonBody(changed, repeated) as { value: { tools: unknown } }).value.tools).toBe(secondTools);
  });

  test("a key spelled twice or with an escape is read as JSON.parse reads it, never from memory", () => {
    const repeated = createRepeatedMembers(["tools"]);
    parseJsonBody(turn([]), repeated);
    const toolsJson = JSON.stringify(tools);
    const twice = `{"model":"m","tools":${toolsJson},"tools":[1]}`;
    expect(withoutMemos(parseJsonBody(twice, repeated))).toEqual(parseJsonBody(twice));
    expect((parseJsonBody(twice, repeated) as { value: { tools: unknown } }).value.tools).toEqual([1]);
    const escaped = `{"model":"m","tools":${toolsJson},"tool\\u0073":[2]}`;
    expect(withoutMemos(parseJsonBody(escaped, repeated))).toEqual(parseJsonBody(escaped));
    const escapedFirst = `{"tool\\u0073":[2],"tools":${toolsJson}}`;
    expect((parseJsonBody(escapedFirst, repeated) as { value: { tools: unknown } }).value.tools).toEqual(
      tools,
    );
  });

  test("invalid JSON around a remembered member gives the message of the text as received", () => {
    const repeated = createRepeatedMembers(["tools"]);
    parseJsonBody(turn([]), repeated);
    for (const broken of [
      `${turn([]).slice(0, -1)},}`,
      turn([]).replace('"model":"m"', '"model":m'),
      `{"tools":${JSON.stringify(tools)}]}`,
      `{"tools":${JSON.stringify(tools)}x}`,
    ]) {
      const reused = parseJsonBody(broken, repeated);
      expect(reused.parsed).toBe(false);
      expect(reused).toEqual(parseJsonBody(broken));
    }
  });

  test("a remembered member still counts towards the depth limit", () => {
    const deepTools = [
      { name: "deep", pad: "x".repeat(2000), nest: JSON.parse(`${"[".repeat(500)}${"]".repeat(500)}`) },
    ];
    const repeated = createRepeatedMembers(["tools"]);
    const text = (extra: number) =>
      `{"messages":${"[".repeat(extra)}${"]".repeat(extra)},"tools":${JSON.stringify(deepTools)}}`;
    expect(parseJsonBody(text(1), repeated).parsed).toBe(true);
    const again = parseJsonBody(text(2), repeated);
    expect(again.parsed).toBe(true);
    expect(jsonNestingDepth(text(2))).toBe(503);
    const deeper = `{"tools":${JSON.stringify(deepTools)},"x":${"[".repeat(maxJsonDepth)}${"]".repeat(maxJsonDepth)}}`;
    expect(withoutMemos(parseJsonBody(deeper, repeated))).toEqual(parseJsonBody(deeper));
    const overByTools = `{"tools":${JSON.stringify([{ ...deepTools[0], nest: JSON.parse(`${"[".repeat(maxJsonDepth)}${"]".repeat(maxJsonDepth)}`) }])}}`;
    parseJsonBody(overByTools, repeated);
    expect(withoutMemos(parseJsonBody(overByTools, repeated))).toEqual(parseJsonBody(overByTools));
    expect(parseJsonBody(overByTools, repeated).parsed).toBe(false);
  });

  test("any JSON text parses to the same value with or without the memory of earlier ones", () => {
    const member = fc.oneof(fc.constant(tools), fc.constant(tools.slice(2)), fc.jsonValue());
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ tools: member, model: fc.jsonValue(), messages: fc.jsonValue() }, { requiredKeys: [] }),
          { minLength: 1, maxLength: 4 },
        ),
        fc.constantFrom("", " ", "\n  "),
        (bodies, space) => {
          const repeated = createRepeatedMembers(["tools", "messages"]);
          for (const body of bodies) {
            const text = JSON.stringify(body, null, space);
            const result = parseJsonBody(text, repeated);
            const { known, ...parsed } = withoutMemos(
              result.parsed ? result : { ...result, known: undefined },
            );
            expect(parsed).toEqual(parseJsonBody(text));
            // A known span is the member's text exactly as this request carried it.
            for (const span of known ?? [])
              expect(text.slice(span.start, span.end)).toBe((span.key as KnownMember).text);
          }
        },
      ),
    );
  });
});
