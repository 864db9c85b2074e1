import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { formatSseFrame } from "./format-sse.ts";
import { parseSseText } from "./read-sse.ts";

const bytes = (text: string) => [...new TextEncoder().encode(text)];

describe("formatSseFrame writes exact bytes", () => {
  test("a data-only frame (what Gemini CLI accepts): data line, blank line", () => {
    expect(formatSseFrame({ candidates: [] })).toBe('data: {"candidates":[]}\n\n');
  });

  test("a named event (what Claude Code requires): event line first", () => {
    expect(formatSseFrame({ type: "message_stop" }, "message_stop")).toBe(
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    );
  });

  test("line breaks inside strings stay escaped, so the frame is one data line", () => {
    const frame = formatSseFrame({ text: "a\nb\r\nc\rd" });
    expect(frame).toBe('data: {"text":"a\\nb\\r\\nc\\rd"}\n\n');
    expect(frame.slice(0, -2)).not.toMatch(/[\r\n]/);
  });

  test("non-ASCII text is written as UTF-8, not as \\u escapes", () => {
    const frame = formatSseFrame({ text: "é 🤖\u2028" });
    expect(frame).toBe('data: {"text":"é 🤖\u2028"}\n\n');
    expect(bytes(frame).slice(15, 17)).toEqual([0xc3, 0xa9]);
  });

  test("any JSON value reads back as the same event from the same bytes", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.option(fc.stringMatching(/^[a-z_.]{1,20}$/)),
        (data, event) => {
          const frame = formatSseFrame(data, event ?? undefined);
          const parsed = parseSseText(frame);
          expect(parsed).toHaveLength(1);
          expect(parsed[0]?.event).toBe(event ?? undefined);
          expect(parsed[0]?.data).toBe(JSON.stringify(data));
        },
      ),
    );
  });
});
