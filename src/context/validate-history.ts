/**
 * Tool-history integrity, checked before any context policy acts: every assistant
 * tool call id is unique and answered by exactly one later tool result of the same
 * name, and every tool result answers an earlier call. A broken history is the
 * client's error (400); it is reported with the id, name and position and never
 * repaired, because guessing would show the model a conversation that did not
 * happen. The position is the item's field in the client's own request (its
 * `source`, set by the ingress), the hub position only for items without one.
 */
import type { HubMessage } from "../hub/schema.ts";
import { invalidField } from "../lib/errors.ts";

interface CallSite {
  name: string;
  /** Where the call was (client field path). */
  at: string;
  /** Where its result was, undefined until seen. */
  answeredAt: string | undefined;
}

export function validateToolHistory(messages: readonly HubMessage[]): void {
  const calls = new Map<string, CallSite>();
  messages.forEach((message, i) => {
    if (message.role === "assistant") {
      message.toolCalls.forEach((call, j) => {
        const at = call.source ?? `messages[${i}].toolCalls[${j}]`;
        const earlier = calls.get(call.id);
        if (earlier) fail(at, `tool call id "${call.id}" is not unique (first used at ${earlier.at})`);
        calls.set(call.id, { name: call.name, at, answeredAt: undefined });
      });
    } else if (message.role === "tool") {
      const at = message.source ?? `messages[${i}]`;
      const call = calls.get(message.toolCallId);
      if (!call)
        fail(at, `tool result "${message.toolCallId}" (${message.name}) answers no earlier tool call`);
      if (call.answeredAt !== undefined) {
        fail(
          at,
          `tool call "${message.toolCallId}" (at ${call.at}) has a second tool result (first at ${call.answeredAt})`,
        );
      }
      if (message.name !== call.name) {
        fail(
          at,
          `tool result "${message.toolCallId}" is named "${message.name}" but the call at ${call.at} is "${call.name}"`,
        );
      }
      call.answeredAt = at;
    }
  });
  for (const [id, call] of calls) {
    if (call.answeredAt === undefined) fail(call.at, `tool call "${id}" (${call.name}) has no tool result`);
  }
}

function fail(param: string, message: string): never {
  throw invalidField(param, `invalid tool history: ${message}`);
}
