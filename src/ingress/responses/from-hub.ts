/**
 * Hub response → Responses object (pure), following the Open Responses schema
 * (https://www.openresponses.org/reference, ResponseResource): every field is
 * present, null when it does not apply. Call ids are the model's own; a call to a
 * flattened namespace tool goes back as `{namespace, name}` (Codex refuses a flat name).
 * `usage` is always present: OpenCode loops forever re-requesting without it.
 */
import type { HubFinishReason, HubResponse } from "../../hub/schema.ts";
import { type EchoedFunctionTool, echoTools } from "./echo-tools.ts";
import type { DeclaredName } from "./read-tools.ts";
import type { ResponsesRequest, Tool } from "./schema.ts";

export type OutputText = { type: "output_text"; text: string; annotations: never[]; logprobs: never[] };
export type MessageItem = {
  type: "message";
  id: string;
  status: "completed" | "incomplete" | "in_progress";
  role: "assistant";
  content: OutputText[];
};
export type FunctionCallItem = {
  type: "function_call";
  id: string;
  call_id: string;
  namespace?: string;
  name: string;
  arguments: string;
  status: "completed" | "in_progress";
};
export type OutputItem = MessageItem | FunctionCallItem;

export type ResponsesUsage = {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
};

export type ResponseStatus = "in_progress" | "completed" | "incomplete";

export type ResponseObject = {
  id: string;
  object: "response";
  created_at: number;
  completed_at: number | null;
  status: ResponseStatus;
  incomplete_details: { reason: string } | null;
  model: string;
  previous_response_id: string | null;
  instructions: string | null;
  output: OutputItem[];
  error: null;
  tools: EchoedFunctionTool[];
  tool_choice: unknown;
  truncation: "auto" | "disabled";
  parallel_tool_calls: boolean;
  text: unknown;
  top_p: number;
  presence_penalty: number;
  frequency_penalty: number;
  top_logprobs: number;
  temperature: number;
  reasoning: unknown;
  user: string | null;
  usage: ResponsesUsage | null;
  max_output_tokens: number | null;
  max_tool_calls: null;
  store: boolean;
  background: false;
  service_tier: string;
  metadata: Record<string, unknown>;
  safety_identifier: string | null;
  prompt_cache_key: string | null;
};

/** A Responses request's fields but its input: what a response echoes of it. */
export type ResponseSettings = Omit<ResponsesRequest, "input">;

/** The request's settings, its input left behind. */
export function responseSettings(request: ResponsesRequest): ResponseSettings {
  const { input: _input, ...settings } = request;
  return settings;
}

/** What the response echoes beyond the hub answer: ids, times, the request's settings. */
export type RenderContext = {
  responseId: string;
  /** Unix seconds. */
  createdAt: number;
  completedAt: number;
  /**
   * The settings the response echoes: the request without its input. A rendering can
   * outlive its exchange for a moment (a heap snapshot found one held by a stale stack
   * slot through two collections), and with the input it held a camera history's every
   * image (~50 MB at turn 80), which the next request then arrived on top of.
   */
  request: ResponseSettings;
  offeredTools: Tool[];
  names: ReadonlyMap<string, DeclaredName>;
};

function incompleteReason(reason: HubFinishReason): string | null {
  switch (reason) {
    case "length":
      return "max_output_tokens";
    case "content_filter":
      return "content_filter";
    case "stop":
    case "tool_calls":
      return null;
    default: {
      const never: never = reason;
      throw new Error(`unknown finish reason ${String(never)}`);
    }
  }
}

/** The schema's Reasoning object has both keys, null when unset (Codex sends only `summary`). */
function echoReasoning(
  reasoning: ResponsesRequest["reasoning"],
): { effort: unknown; summary: unknown } | null {
  if (!reasoning) return null;
  return { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null };
}

export function toOutputItems(response: HubResponse, ctx: RenderContext): OutputItem[] {
  const suffix = ctx.responseId.replace(/^resp_/, "");
  const items: OutputItem[] = [];
  const truncated = incompleteReason(response.finishReason) !== null;
  if ((response.text !== null && response.text !== "") || response.toolCalls.length === 0) {
    items.push({
      type: "message",
      id: `msg_${suffix}`,
      status: truncated ? "incomplete" : "completed",
      role: "assistant",
      content: [{ type: "output_text", text: response.text ?? "", annotations: [], logprobs: [] }],
    });
  }
  response.toolCalls.forEach((call, i) => {
    const declared = ctx.names.get(call.name);
    items.push({
      type: "function_call",
      id: `fc_${suffix}_${i}`,
      call_id: call.id,
      ...(declared?.namespace ? { namespace: declared.namespace } : {}),
      name: declared?.name ?? call.name,
      arguments: call.arguments,
      status: "completed",
    });
  });
  return items;
}

export function toUsage(response: HubResponse): ResponsesUsage {
  const { inputTokens, outputTokens, cachedInputTokens } = response.usage;
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: cachedInputTokens ?? 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
}

/** The response object as first announced (`response.created`): in progress, no output yet. */
export function toPendingResponse(response: HubResponse, ctx: RenderContext): ResponseObject {
  const { request } = ctx;
  return {
    id: ctx.responseId,
    object: "response",
    created_at: ctx.createdAt,
    completed_at: null,
    status: "in_progress",
    incomplete_details: null,
    model: response.model,
    previous_response_id: request.previous_response_id ?? null,
    instructions: request.instructions ?? null,
    output: [],
    error: null,
    tools: echoTools(ctx.offeredTools),
    tool_choice: request.tool_choice ?? "auto",
    truncation: request.truncation ?? "disabled",
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    text: request.text ?? { format: { type: "text" } },
    top_p: request.top_p ?? 1,
    presence_penalty: 0,
    frequency_penalty: 0,
    top_logprobs: 0,
    temperature: request.temperature ?? 1,
    reasoning: echoReasoning(request.reasoning),
    user: request.user ?? null,
    usage: null,
    max_output_tokens: request.max_output_tokens ?? null,
    max_tool_calls: null,
    store: request.store !== false,
    background: false,
    service_tier: "default",
    metadata: request.metadata ?? {},
    safety_identifier: request.safety_identifier ?? null,
    prompt_cache_key: request.prompt_cache_key ?? null,
  };
}

/** The finished response object (the JSON answer, and the payload of `response.completed`). */
export function fromHub(response: HubResponse, ctx: RenderContext): ResponseObject {
  const reason = incompleteReason(response.finishReason);
  return {
    ...toPendingResponse(response, ctx),
    completed_at: reason === null ? ctx.completedAt : null,
    status: reason === null ? "completed" : "incomplete",
    incomplete_details: reason === null ? null : { reason },
    output: toOutputItems(response, ctx),
    usage: toUsage(response),
  };
}
