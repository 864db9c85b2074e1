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
  at: string;
  answeredAt: string | undefined;
}

export function validateToolHistory(messages: readonly HubMessage[]): void {
  const calls = new Map<string, CallSite>();
  messages.forEach((message, i) => {
    if (message.role === "assistant") {
      message.toolCalls.forEach((call, j) => {
        const at = `messages[${i}].toolCalls[${j}]`;
        const earlier = calls.get(call.id);
        if (earlier) {
          fail(`tool call id "${call.id}" at ${at} is not unique (first used at ${earlier.at})`);
        }
        calls.set(call.id, { name: call.name, at, answeredAt: undefined });
      });
    } else if (message.role === "tool") {
      const at = `messages[${i}]`;
      const call = calls.get(message.toolCallId);
      if (!call) {
        fail(
          `tool result "${message.toolCallId}" (${message.name}) at ${at} answers no earlier tool call`,
        );
      }
      if (call.answeredAt !== undefined) {
        fail(
          `tool call "${message.toolCallId}" has a second tool result at ${at} (first at ${call.answeredAt})`,
        );
      }
      if (message.name !== call.name) {
        fail(
          `tool result "${message.toolCallId}" at ${at} is named "${message.name}" but the call at ${call.at} is "${call.name}"`,
        );
      }
      call.answeredAt = at;
    }
  });
  for (const [id, call] of calls) {
    if (call.answeredAt === undefined) {
      fail(`tool call "${id}" (${call.name}) at ${call.at} has no tool result`);
    }
  }
}

function fail(message: string): never {
  throw new SidecarError("invalid_request", `invalid tool history: ${message}`);
}
