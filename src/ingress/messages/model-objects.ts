/**
 * The episode's model as Anthropic's Models API shows it (`GET /v1/models`, `GET
 * /v1/models/{id}`): ModelInfo objects and one page of them
 * (https://docs.anthropic.com/en/api/models-list). Claude Code asks for the list with
 * CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1 (`?limit=1000`). `max_input_tokens` is the
 * upstream's real prompt limit and `max_tokens` its output limit; the release date of
 * an upstream model is unknown, so the epoch (as the API documents for that case).
 */
import type { ServedModel } from "../episode-model.ts";

export type AnthropicModelInfo = {
  type: "model";
  id: string;
  display_name: string;
  created_at: string;
  max_input_tokens: number;
  max_tokens: number;
  /** Claude's capability object names Claude features; none of them describes a Qwen model. */
  capabilities: null;
  lifecycle: "active";
  deprecated_at: null;
  retires_at: null;
  line: null;
};

export function toAnthropicModel({ id, capabilities: c }: ServedModel): AnthropicModelInfo {
  return {
    type: "model",
    id,
    display_name: id,
    created_at: "1970-01-01T00:00:00Z",
    max_input_tokens: c.max_input_tokens,
    max_tokens: c.max_output_tokens,
    capabilities: null,
    lifecycle: "active",
    deprecated_at: null,
    retires_at: null,
    line: null,
  };
}

/** One page holding every model (the sidecar serves one per episode, so paging never continues). */
export function toAnthropicModelPage(models: ServedModel[]) {
  const data = models.map(toAnthropicModel);
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
