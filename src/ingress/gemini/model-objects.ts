/**
 * The episode's model as the Gemini API's `models.list` / `models.get` show it
 * (https://ai.google.dev/api/models): Model resources with the real token limits.
 * Only `generateContent` is listed: streaming is the same method, and countTokens is
 * answered locally with a 400 (the CLI then estimates).
 */
import type { ServedModel } from "../episode-model.ts";

export type GeminiModel = {
  name: string;
  baseModelId: string;
  version: string;
  displayName: string;
  description: string;
  inputTokenLimit: number;
  outputTokenLimit: number;
  supportedGenerationMethods: string[];
  thinking: boolean;
};

export function toGeminiModel({ id, capabilities: c }: ServedModel): GeminiModel {
  return {
    name: `models/${id}`,
    baseModelId: id,
    version: "1",
    displayName: id,
    description: `${id} through ura-sidecar (a Qwen Chat Completions upstream)`,
    inputTokenLimit: c.max_input_tokens,
    outputTokenLimit: c.max_output_tokens,
    supportedGenerationMethods: ["generateContent"],
    // The sidecar always asks the upstream not to think.
    thinking: false,
  };
}

export function toGeminiModelList(models: ServedModel[]) {
  return { models: models.map(toGeminiModel) };
}
