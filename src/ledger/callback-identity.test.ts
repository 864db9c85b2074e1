import { describe, expect, test } from "bun:test";
import { readCallbackIdentity } from "./callback-identity.ts";

describe("readCallbackIdentity", () => {
  test("reads each client's identity", () => {
    expect(readCallbackIdentity({ meta: { "claudecode/toolUseId": "toolu_1" } })).toEqual({
      kind: "call_id",
      value: "toolu_1",
    });
    expect(readCallbackIdentity({ meta: { callId: "call_9", progressToken: 3 } })).toEqual({
      kind: "call_id",
      value: "call_9",
    });
    expect(readCallbackIdentity({ args: { nonce: "x", _callID: "call_2" } })).toEqual({
      kind: "call_id",
      value: "call_2",
    });
  });

  test("no identity (Gemini CLI; progressToken is not an identity)", () => {
    expect(readCallbackIdentity({ meta: { progressToken: "uuid" }, args: { nonce: "x" } })).toBeUndefined();
    expect(readCallbackIdentity({})).toBeUndefined();
  });

  test("the same id offered twice is fine, two different ids are refused", () => {
    expect(readCallbackIdentity({ meta: { callId: "a" }, args: { _callID: "a" } })?.value).toBe("a");
    expect(() => readCallbackIdentity({ meta: { callId: "a" }, args: { _callID: "b" } })).toThrow(
      "different call ids: a, b",
    );
  });

  test("a non-string id is refused", () => {
    expect(() => readCallbackIdentity({ args: { _callID: 7 } })).toThrow(
      "arguments._callID must be a non-empty string",
    );
    expect(() => readCallbackIdentity({ meta: { callId: "" } })).toThrow("_meta.callId");
  });
});
