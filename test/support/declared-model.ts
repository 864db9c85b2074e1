/**
 * A model declared in the configuration (`upstream.models`), as tests declare one:
 * a 32K window that takes images and tool calls, with the given capabilities on top.
 */
import type { ModelCapabilities } from "../../src/models/model-capabilities.ts";

export function declaredModel(fields: Partial<ModelCapabilities> = {}): ModelCapabilities {
  return {
    context_window: 32768,
    max_input_tokens: 30720,
    max_output_tokens: 8192,
    image_input: true,
    video_input: false,
    thinking: "none",
    cache: "implicit",
    tool_calls: true,
    ...fields,
  };
}
