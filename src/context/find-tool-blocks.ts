/**
 * Splits a validated history into call/result blocks: one assistant message that
 * made tool calls plus the tool messages answering them. A block is the unit the
 * sliding window keeps or removes, so no call is ever left without its result or
 * a result without its call. Other messages (system, user, assistant text) belong
 * to no block and are never pruned.
 */
import type { HubMessage } from "../hub/schema.ts";

export interface ToolBlock {
  /** Indexes into the history: the assistant message first, then its results in order. */
  messageIndexes: number[];
  toolCallIds: string[];
}

/** Blocks in history order (oldest first). Expects a history that passed validateToolHistory. */
export function findToolBlocks(messages: readonly HubMessage[]): ToolBlock[] {
  const blocks: ToolBlock[] = [];
  const blockByCallId = new Map<string, ToolBlock>();
  messages.forEach((message, i) => {
    if (message.role === "assistant" && message.toolCalls.length > 0) {
      const block: ToolBlock = {
        messageIndexes: [i],
        toolCallIds: message.toolCalls.map((call) => call.id),
      };
      blocks.push(block);
      for (const id of block.toolCallIds) blockByCallId.set(id, block);
    } else if (message.role === "tool") {
      blockByCallId.get(message.toolCallId)?.messageIndexes.push(i);
    }
  });
  return blocks;
}
