/**
 * Hub finish reason → Anthropic `stop_reason`. A response carrying tool calls is
 * always `tool_use` (Claude Code runs tools only then), and one without is never
 * `tool_use`. Chat Completions does not
 * say whether a stop sequence ended the text, so `stop` is `end_turn`.
 */
import type { HubResponse } from "../../hub/schema.ts";

export type StopReason = "end_turn" | "max_tokens" | "tool_use" | "refusal";

export function toStopReason(response: Pick<HubResponse, "finishReason" | "toolCalls">): StopReason {
  if (response.toolCalls.length > 0) return "tool_use";
  switch (response.finishReason) {
    case "stop":
    case "tool_calls": // without any call there is nothing for the client to run
      return "end_turn";
    case "length":
      return "max_tokens";
    case "content_filter":
      return "refusal";
    default: {
      const never: never = response.finishReason;
      throw new Error(`unknown finish reason ${String(never)}`);
    }
  }
}
