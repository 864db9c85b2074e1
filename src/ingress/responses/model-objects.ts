/**
 * The episode's model as OpenAI's Models API shows it (`GET /v1/models`, `GET
 * /v1/models/{id}`): list and model objects (https://platform.openai.com/docs/api-reference/models),
 * with the model's real limits and input modalities beside the standard fields (no
 * pinned client reads them; a launcher or a human can).
 */
import type { ServedModel } from "../episode-model.ts";

export type OpenAiModel = {
  id: string;
  object: "model";
  /** Unix seconds; unknown for an upstream model, so 0. */
  created: number;
  owned_by: string;
  context_window: number;
  max_input_tokens: number;
  max_output_tokens: number;
  input_modalities: string[];
};

export function toOpenAiModel({ id, capabilities: c }: ServedModel): OpenAiModel {
  return {
    id,
    object: "model",
    created: 0,
    owned_by: "ura-sidecar",
    context_window: c.context_window,
    max_input_tokens: c.max_input_tokens,
    max_output_tokens: c.max_output_tokens,
    input_modalities: ["text", ...(c.image_input ? ["image"] : []), ...(c.video_input ? ["video"] : [])],
  };
}

export function toOpenAiModelList(models: ServedModel[]) {
  return { object: "list" as const, data: models.map(toOpenAiModel) };
}
