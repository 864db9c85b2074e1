import { describe, expect, test } from "bun:test";
import type { HubMessage, HubToolMessage } from "../hub/schema.ts";
import { sidecarErrorOf } from "../lib/sidecar-error-of.ts";
import { validateToolHistory } from "./validate-history.ts";

const call = (id: string, name: string) => ({ id, name, arguments: "{}" });
const result = (toolCallId: string, name: string): HubToolMessage => ({
  role: "tool",
  toolCallId,
  name,
  content: [{ type: "text", text: "ok" }],
});
const user: HubMessage = { role: "user", content: [{ type: "text", text: "go" }] };

const errorOf = (messages: HubMessage[]) => sidecarErrorOf(() => validateToolHistory(messages));

describe("validateToolHistory", () => {
  test("accepts a history where every call has exactly one matching result", () => {
    expect(() =>
      validateToolHistory([
        { role: "system", content: [{ type: "text", text: "be careful" }] },
        user,
        { role: "assistant", text: null, toolCalls: [call("a", "grip"), call("b", "move_arm")] },
        result("b", "move_arm"),
        result("a", "grip"),
        { role: "assistant", text: "done", toolCalls: [] },
      ]),
    ).not.toThrow();
  });

  test("a call without a result names the id, the tool and the position", () => {
    const error = errorOf([
      user,
      { role: "assistant", text: null, toolCalls: [call("a", "grip"), call("b", "move_arm")] },
      result("a", "grip"),
    ]);
    expect(error.kind).toBe("invalid_request");
    expect(error.status).toBe(400);
    expect(error.message).toBe(
      'messages[1].toolCalls[1]: invalid tool history: tool call "b" (move_arm) has no tool result',
    );
  });

  test("a duplicate call id is rejected with both positions", () => {
    const error = errorOf([
      { role: "assistant", text: null, toolCalls: [call("a", "grip")] },
      result("a", "grip"),
      { role: "assistant", text: null, toolCalls: [call("a", "grip")] },
      result("a", "grip"),
    ]);
    expect(error.kind).toBe("invalid_request");
    expect(error.message).toContain(
      'messages[2].toolCalls[0]: invalid tool history: tool call id "a" is not unique (first used at messages[0].toolCalls[0])',
    );
  });

  test("a duplicate id inside one batch is rejected", () => {
    const error = errorOf([
      { role: "assistant", text: null, toolCalls: [call("a", "grip"), call("a", "grip")] },
    ]);
    expect(error.message).toStartWith("messages[0].toolCalls[1]: invalid tool history");
  });

  test("a second result for the same call is rejected", () => {
    const error = errorOf([
      { role: "assistant", text: null, toolCalls: [call("a", "grip")] },
      result("a", "grip"),
      result("a", "grip"),
    ]);
    expect(error.message).toContain(
      'messages[2]: invalid tool history: tool call "a" (at messages[0].toolCalls[0]) has a second tool result (first at messages[1])',
    );
  });

  test("a result whose name differs from its call is rejected", () => {
    const error = errorOf([
      { role: "assistant", text: null, toolCalls: [call("a", "grip")] },
      result("a", "move_arm"),
    ]);
    expect(error.message).toContain(
      'messages[1]: invalid tool history: tool result "a" is named "move_arm" but the call at messages[0].toolCalls[0] is "grip"',
    );
  });

  test("a result without a call is rejected, also when the call comes later", () => {
    expect(errorOf([user, result("x", "grip")]).message).toContain(
      'messages[1]: invalid tool history: tool result "x" (grip) answers no earlier tool call',
    );
    const late = errorOf([
      result("a", "grip"),
      { role: "assistant", text: null, toolCalls: [call("a", "grip")] },
    ]);
    expect(late.message).toContain("answers no earlier tool call");
  });

  test("an item the ingress placed names the client's own field, also as the error's param", () => {
    const error = errorOf([
      user,
      {
        role: "assistant",
        text: null,
        toolCalls: [{ ...call("a", "grip"), source: "contents[1].parts[0].functionCall" }],
      },
      { ...result("a", "grip"), source: "contents[2].parts[0].functionResponse" },
      { ...result("a", "grip"), source: "contents[2].parts[1].functionResponse" },
    ]);
    expect(error.param).toBe("contents[2].parts[1].functionResponse");
    expect(error.message).toBe(
      'contents[2].parts[1].functionResponse: invalid tool history: tool call "a" (at contents[1].parts[0].functionCall) has a second tool result (first at contents[2].parts[0].functionResponse)',
    );
    expect(error.message).not.toContain("messages[");
  });
});
