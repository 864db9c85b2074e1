/**
 * Hub response → Gemini `GenerateContentResponse` (pure): one candidate whose
 * parts are the text, then one functionCall per tool call carrying Qwen's call id
 * (the CLI echoes it back on `functionResponse.id`). Plain TS types: this is what
 * we write, not what we read.
 * Spec: https://ai.google.dev/api/generate-content#generatecontentresponse
 */
import type { HubFinishReason, HubResponse } from "../../hub/schema.ts";
import { SidecarError } from "../../lib/errors.ts";

export type GeminiResponsePart =
  | { text: string }
  | { functionCall: { id: string; name: string; args: Record<string, unknown> } };

export type GeminiFinishReason = "STOP" | "MAX_TOKENS" | "SAFETY";

export type GeminiUsageMetadata = {
  promptTokenCount: number;
  candidatesTokenCount: number;
  totalTokenCount: number;
  /** Of promptTokenCount, the tokens served from the provider's prompt cache. */
  cachedContentTokenCount?: number;
};

export type GenerateContentResponse = {
  candidates: {
    content: { role: "model"; parts: GeminiResponsePart[] };
    finishReason?: GeminiFinishReason;
    index: 0;
  }[];
  usageMetadata?: GeminiUsageMetadata;
  modelVersion: string;
  responseId: string;
};

/** Gemini has no "tool calls" finish reason: a turn that calls functions ends with STOP. */
export function mapFinishReason(reason: HubFinishReason): GeminiFinishReason {
  switch (reason) {
    case "stop":
    case "tool_calls":
      return "STOP";
    case "length":
      return "MAX_TOKENS";
    case "content_filter":
      return "SAFETY";
    default: {
      const never: never = reason;
      throw new Error(`unknown finish reason ${never}`);
    }
  }
}

export function responseParts(response: HubResponse): GeminiResponsePart[] {
  const parts: GeminiResponsePart[] = [];
  if (response.text !== null && response.text !== "") parts.push({ text: response.text });
  for (const call of response.toolCalls) {
    const args: unknown = JSON.parse(call.arguments);
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      throw new SidecarError(
        "upstream_invalid",
        `tool call ${call.id} (${call.name}): arguments are not a JSON object`,
      );
    }
    parts.push({ functionCall: { id: call.id, name: call.name, args: args as Record<string, unknown> } });
  }
  return parts;
}

export function usageMetadata(response: HubResponse): GeminiUsageMetadata {
  const { inputTokens, outputTokens, cachedInputTokens } = response.usage;
  return {
    promptTokenCount: inputTokens,
    candidatesTokenCount: outputTokens,
    totalTokenCount: inputTokens + outputTokens,
    // Part of promptTokenCount, as in Gemini's own usage metadata.
    ...(cachedInputTokens ? { cachedContentTokenCount: cachedInputTokens } : {}),
  };
}

/** One GenerateContentResponse for the JSON route (`:generateContent`). */
export function fromHub(response: HubResponse): GenerateContentResponse {
  return {
    candidates: [
      {
        content: { role: "model", parts: responseParts(response) },
        finishReason: mapFinishReason(response.finishReason),
        index: 0,
      },
    ],
    usageMetadata: usageMetadata(response),
    modelVersion: response.model,
    responseId: response.id,
  };
}
