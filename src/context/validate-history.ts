/**
 * Tool-history integrity, checked before any context policy acts: every assistant
 * tool call id is unique and answered by exactly one later tool result of the same
 * name, and every tool result answers an earlier call. A broken history is the
 * client's error (400); it is reported with the id, name and message position and
 * never repaired, because guessing would show the model a conversation that did
 * not happen.
 */
import type { HubMessage } from "../hub/schema.ts";
import { SidecarError } from "../lib/errors.ts";

interface CallSite {
  name: string;
  messageIndex: number;
  callIndex: number;
  /** Index of the message holding its result, -1 until seen. */
  answeredAt: number;
}

const callPosition = (call: CallSite) => `messages[${call.messageIndex}].toolCalls[${call.callIndex}]`;

export function validateToolHistory(messages: readonly HubMessage[]): void {
  const calls = new Map<string, CallSite>();
  messages.forEach((message, i) => {
    if (message.role === "assistant") {
      message.toolCalls.forEach((call, j) => {
        const earlier = calls.get(call.id);
        if (earlier) {
          fail(
            `tool call id "${call.id}" at messages[${i}].toolCalls[${j}] is not unique (first used at ${callPosition(earlier)})`,
          );
        }
        calls.set(call.id, { name: call.name, messageIndex: i, callIndex: j, answeredAt: -1 });
      });
    } else if (message.role === "tool") {
      const call = calls.get(message.toolCallId);
      if (!call) {
        fail(
          `tool result "${message.toolCallId}" (${message.name}) at messages[${i}] answers no earlier tool call`,
        );
      }
      if (call.answeredAt >= 0) {
        fail(
          `tool call "${message.toolCallId}" has a second tool result at messages[${i}] (first at messages[${call.answeredAt}])`,
        );
      }
      if (message.name !== call.name) {
        fail(
          `tool result "${message.toolCallId}" at messages[${i}] is named "${message.name}" but the call at ${callPosition(call)} is "${call.name}"`,
        );
      }
      call.answeredAt = i;
    }
  });
  for (const [id, call] of calls) {
    if (call.answeredAt < 0) {
      fail(`tool call "${id}" (${call.name}) at ${callPosition(call)} has no tool result`);
    }
  }
}

function fail(message: string): never {
  throw new SidecarError("invalid_request", `invalid tool history: ${message}`);
}
