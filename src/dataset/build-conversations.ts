/**
 * Exchanges → training conversations (pure). One conversation is what the model
 * really saw and produced: the upstream wire request of an exchange (after the
 * context policy and the WebP conversion) followed by the assistant message of
 * its validated upstream response.
 *
 * Clients resend the whole history every turn, so exchange N+1's request starts
 * with exchange N's request plus N's answer. Exchanges that continue each other
 * that way form a chain, and only its last exchange becomes a line: the earlier
 * ones are prefixes of it. A request that continues no earlier exchange starts a
 * new chain — a side request (a title request has another system prompt and no
 * tools), or a history the context policy rewrote (omission notices instead of
 * images): what the model saw then is not what it saw before, so the rewritten
 * trajectory is its own conversation and the one before it ends where it was
 * last seen whole (docs/dataset.md).
 *
 * Only delivered exchanges count: a revoked or failed answer never reached the
 * client, so nothing the model did next was built on it.
 */

import { toChatMessages } from "../upstream/build-chat-request.ts";
import type { ChatMessage } from "../upstream/chat-schema.ts";
import { unmarkCachePrefix } from "../upstream/mark-cache-prefix.ts";
import type { ExchangeStages } from "./read-episode.ts";

/** The upstream body as recorded: the Chat Completions request that was sent. */
export type WireRequest = {
  model?: string;
  messages: Record<string, unknown>[];
  tools?: Record<string, unknown>[];
  parallel_tool_calls?: boolean;
  [key: string]: unknown;
};

export type Conversation = {
  /** The exchanges of the chain, oldest first; the last one is the line. */
  exchanges: string[];
  request: WireRequest;
  /** The validated answer to the last exchange, as a Chat assistant message. */
  answer: ChatMessage;
  /** The context policy reduced the last exchange's request (it is not the whole history the client sent). */
  contextReduced: boolean;
  /** This chain starts where the context policy rewrote an earlier chain's history. */
  continuesReducedHistoryOf: string | undefined;
};

type ValidatedResponse = {
  text: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
};

function isWireRequest(value: unknown): value is WireRequest {
  return typeof value === "object" && value !== null && Array.isArray((value as WireRequest).messages);
}

function isValidated(value: unknown): value is ValidatedResponse {
  if (typeof value !== "object" || value === null) return false;
  const v = value as ValidatedResponse;
  return (v.text === null || typeof v.text === "string") && Array.isArray(v.toolCalls);
}

/** The validated response as the assistant message the next request carries (the sidecar's own rendering). */
export function answerMessage(response: ValidatedResponse): ChatMessage {
  const [message] = toChatMessages([
    { role: "assistant", text: response.text, toolCalls: response.toolCalls },
  ]);
  if (!message) throw new Error("an assistant message renders as one Chat message");
  return message;
}

/** A delivered exchange with everything a conversation needs, or why it is not usable. */
export function deliveredExchange(
  exchange: ExchangeStages,
): { request: WireRequest; answer: ChatMessage; reduced: boolean } | { unusable: string } | undefined {
  if (exchange.stages.status?.status !== "delivered") return undefined;
  const body = exchange.stages.upstream_request?.body;
  if (!isWireRequest(body))
    return { unusable: `${exchange.id}: delivered, but its upstream request is not recorded` };
  const validated = exchange.stages.upstream_response?.validated;
  if (!isValidated(validated))
    return { unusable: `${exchange.id}: delivered, but its validated upstream response is not recorded` };
  // body_budget's decision was in upstream_request's `context` in lines written before 2026-12-05 (docs/records.md).
  const reduced = [exchange.stages.after_context?.decision, exchange.stages.upstream_request?.context].some(
    (decision) => decision?.reduced === true,
  );
  // Cache markers move every turn and say nothing about the conversation: left out.
  const request = { ...body, messages: unmarkCachePrefix(body.messages) };
  return { request, answer: answerMessage(validated), reduced };
}

type Chain = {
  exchanges: string[];
  request: WireRequest;
  answer: ChatMessage;
  reduced: boolean;
  continues: string | undefined;
  /** JSON of each message of request + answer: what a continuing request must start with. */
  history: string[];
  toolsJson: string;
};

export type BuildResult = { conversations: Conversation[]; unusable: string[] };

export function buildConversations(exchanges: ExchangeStages[]): BuildResult {
  const chains: Chain[] = [];
  const unusable: string[] = [];
  for (const exchange of exchanges) {
    const delivered = deliveredExchange(exchange);
    if (delivered === undefined) continue;
    if ("unusable" in delivered) {
      unusable.push(delivered.unusable);
      continue;
    }
    const messages = delivered.request.messages.map((m) => JSON.stringify(m));
    const toolsJson = JSON.stringify(delivered.request.tools ?? []);
    const continued = longestContinued(chains, messages, toolsJson);
    const next: Chain = {
      exchanges: [...(continued?.exchanges ?? []), exchange.id],
      request: delivered.request,
      answer: delivered.answer,
      reduced: delivered.reduced,
      continues: continued
        ? continued.continues
        : delivered.reduced
          ? reducedPredecessor(chains, toolsJson)
          : undefined,
      history: [...messages, JSON.stringify(delivered.answer)],
      toolsJson,
    };
    if (continued) chains[chains.indexOf(continued)] = next;
    else chains.push(next);
  }
  return {
    conversations: chains.map((c) => ({
      exchanges: c.exchanges,
      request: c.request,
      answer: c.answer,
      contextReduced: c.reduced,
      continuesReducedHistoryOf: c.continues,
    })),
    unusable,
  };
}

function longestContinued(chains: Chain[], messages: string[], toolsJson: string): Chain | undefined {
  let best: Chain | undefined;
  for (const chain of chains) {
    if (chain.toolsJson !== toolsJson || chain.history.length > messages.length) continue;
    if (!chain.history.every((m, i) => m === messages[i])) continue;
    if (!best || chain.history.length > best.history.length) best = chain;
  }
  return best;
}

/** The latest chain with the same tools: the history a reduced request most likely rewrote. */
function reducedPredecessor(chains: Chain[], toolsJson: string): string | undefined {
  return chains
    .filter((c) => c.toolsJson === toolsJson)
    .at(-1)
    ?.exchanges.at(-1);
}
