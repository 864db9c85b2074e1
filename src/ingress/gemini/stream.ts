/**
 * The buffered hub response replayed as Gemini's SSE (`:streamGenerateContent?alt=sse`):
 * one `data: {GenerateContentResponse}` frame per part (no `event:` lines — Gemini
 * CLI accepts only data frames), `finishReason` and `usageMetadata` on the last
 * one, `modelVersion` and `responseId` on every one. Each frame is written whole.
 * Spec: https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
 */
import type { HubResponse } from "../../hub/schema.ts";
import { formatSseFrame } from "../../sse/format-sse.ts";
import {
  type GeminiResponsePart,
  type GenerateContentResponse,
  mapFinishReason,
  responseParts,
  usageMetadata,
} from "./from-hub.ts";

/** The chunks of a streamed answer, in order (also the body of a non-SSE stream, as a JSON array). */
export function streamEvents(response: HubResponse): GenerateContentResponse[] {
  const parts = responseParts(response);
  // An answer with nothing to say still ends with one chunk carrying the finish reason.
  const groups: GeminiResponsePart[][] = parts.length > 0 ? parts.map((p) => [p]) : [[]];
  return groups.map((group, i) => {
    const last = i === groups.length - 1;
    return {
      candidates: [
        {
          content: { role: "model", parts: group },
          ...(last ? { finishReason: mapFinishReason(response.finishReason) } : {}),
          index: 0,
        },
      ],
      ...(last ? { usageMetadata: usageMetadata(response) } : {}),
      modelVersion: response.model,
      responseId: response.id,
    };
  });
}

/** SSE frames, one per chunk. */
export function renderStream(response: HubResponse): string[] {
  return streamEvents(response).map((chunk) => formatSseFrame(chunk));
}
