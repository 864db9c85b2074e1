/**
 * An episode's message keys: a message gets its earlier key only when it equals, member by
 * member, the one at its place in the previous request (a frame's stand-in by its SHA-256);
 * any change, and a message holding a frame as a long string, gets a new one.
 */
import { describe, expect, test } from "bun:test";
import type { HubMessage } from "../hub/schema.ts";
import { KnownFrame } from "../lib/known-frame.ts";
import { knownTextFromChars } from "../lib/known-texts.ts";
import { createMessageKeys, sameValue } from "./message-keys.ts";

const frame = (digest: string, length = 6000) =>
  new KnownFrame(
    { digest, values: new Map() },
    length,
    { blob: digest, head: "", prefix: "iVBORw0KGgo" },
    {
      onDisk: () => true,
      read: () => {
        throw new Error("never read");
      },
      setAside: () => {},
    },
  );

const call = (n: number): HubMessage => ({
  role: "assistant",
  text: null,
  toolCalls: [{ id: `call_${n}`, name: "observe", arguments: "{}" }],
});
const result = (n: number, data: string | KnownFrame, text = `frame ${n}`) =>
  ({
    role: "tool",
    toolCallId: `call_${n}`,
    name: "observe",
    content: [
      { type: "text", text },
      { type: "image", mediaType: "image/png", data },
    ],
  }) satisfies HubMessage;

/** The history of `turns` turns as a translation makes it: new objects every time. */
const history = (turns: number, dataOf: (n: number) => string | KnownFrame): HubMessage[] => [
  { role: "system", content: [{ type: "text", text: "You drive a robot arm." }] },
  ...Array.from({ length: turns }, (_, i) => [call(i), result(i, dataOf(i))]).flat(),
];

describe("message keys", () => {
  test("a resent history keeps its keys; only the new messages get new ones", () => {
    const keys = createMessageKeys();
    const first = keys.keysOf(history(3, (n) => frame(`d${n}`)));
    const second = keys.keysOf(history(4, (n) => frame(`d${n}`)));
    expect(first.every((key, i) => second[i] === key)).toBe(true);
    expect(second.slice(first.length).some((key) => first.includes(key))).toBe(false);
    expect(keys.counts()).toEqual({ reused: 7, fresh: 9 });
    // A copy with notices is keyed by its message's key and its count.
    expect(second[2]?.withNotices(1)).toBe(first[2]?.withNotices(1) as object);
    expect(second[2]?.withNotices(1)).not.toBe(second[2]?.withNotices(2) as object);
  });

  test("any change to a message, a frame of other content or the order of its members gets a new key", () => {
    const base = () => history(2, (n) => frame(`d${n}`));
    const edits: [string, (messages: HubMessage[]) => void][] = [
      ["text", (m) => Object.assign(m[2] as object, result(0, frame("d0"), "frame 0 edited"))],
      ["frame", (m) => Object.assign(m[2] as object, result(0, frame("other")))],
      ["frame length", (m) => Object.assign(m[2] as object, result(0, frame("d0", 6004)))],
      ["frame as text", (m) => Object.assign(m[2] as object, result(0, "A".repeat(100)))],
      ["member added", (m) => Object.assign(m[2] as object, { isError: true })],
      [
        "arguments",
        (m) =>
          Object.assign(m[1] as object, { toolCalls: [{ id: "call_0", name: "observe", arguments: "{ }" }] }),
      ],
      [
        "member order",
        (m) => {
          const { role, toolCallId, name, content } = m[2] as HubMessage & { role: "tool" };
          m[2] = { role, name, toolCallId, content };
        },
      ],
    ];
    for (const [what, edit] of edits) {
      const keys = createMessageKeys();
      const before = keys.keysOf(base());
      const changed = base();
      edit(changed);
      const after = keys.keysOf(changed);
      expect({ what, same: after.map((key, i) => key === before[i]) }).toEqual({
        what,
        same: [true, what !== "arguments", what === "arguments", true, true],
      });
    }
  });

  test("a message holding a frame as a long string is not kept: resent, it is measured again", () => {
    const keys = createMessageKeys();
    const long = "A".repeat(knownTextFromChars);
    const first = keys.keysOf(history(1, () => long));
    const second = keys.keysOf(history(1, () => long));
    expect(second[1] === first[1]).toBe(true);
    expect(second[2] === first[2]).toBe(false);
    // Short image data is held, and compared by value.
    const short = "A".repeat(knownTextFromChars - 1);
    const third = keys.keysOf(history(1, () => short));
    expect(keys.keysOf(history(1, () => short))[2] === third[2]).toBe(true);
  });

  test("no message is kept past the first maxChars characters of the history's texts", () => {
    const keys = createMessageKeys(30);
    // The system prompt's 22 characters fit; with the first call's 15 ("call_0", "observe", "{}") they do not.
    const first = keys.keysOf(history(3, (n) => frame(`d${n}`)));
    const second = keys.keysOf(history(3, (n) => frame(`d${n}`)));
    expect(second.map((key, i) => key === first[i])).toEqual([
      true,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  test("a stand-in equals only a stand-in of the same text", () => {
    expect(sameValue(frame("x"), frame("x"))).toBe(true);
    expect(sameValue(frame("x"), frame("y"))).toBe(false);
    expect(sameValue(frame("x", 10), frame("x", 11))).toBe(false);
    expect(sameValue(frame("x"), "x")).toBe(false);
    expect(sameValue({ a: 1, b: [1, { c: "d" }] }, { a: 1, b: [1, { c: "d" }] })).toBe(true);
    expect(sameValue({ a: 1, b: [1, { c: "d" }] }, { a: 1, b: [1, { c: "e" }] })).toBe(false);
    expect(sameValue({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(sameValue([1, 2], { 0: 1, 1: 2 })).toBe(false);
  });
});
