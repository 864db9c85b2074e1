/**
 * The Qwen models the sidecar knows without a declaration, with their capabilities
 * as Model Studio's model pages state them (docs/models.md lists each figure with its
 * source and says which could not be confirmed). Where a figure is unconfirmed the
 * smaller plausible value is used: a client told a smaller window compacts earlier,
 * while one told a larger window overflows upstream. A deployment whose region or
 * snapshot differs overrides any field under `upstream.models.<id>` in config.
 * Token figures: Model Studio's "K" is 1,024 tokens.
 */
import type { ModelCapabilities } from "./model-capabilities.ts";

const k = 1024;

export const builtinModels: Readonly<Record<string, ModelCapabilities>> = {
  "qwen3-vl-plus": {
    context_window: 256 * k,
    max_input_tokens: 254 * k,
    max_output_tokens: 32 * k,
    image_input: true,
    video_input: true,
    thinking: "hybrid",
    cache: "implicit",
    tool_calls: true,
  },
  "qwen3-vl-flash": {
    context_window: 256 * k,
    max_input_tokens: 254 * k,
    max_output_tokens: 32 * k,
    image_input: true,
    video_input: true,
    thinking: "hybrid",
    cache: "implicit",
    tool_calls: true,
  },
  "qwen-vl-max": {
    context_window: 128 * k,
    max_input_tokens: 126 * k,
    max_output_tokens: 8 * k,
    image_input: true,
    video_input: true,
    thinking: "none",
    cache: "implicit",
    tool_calls: false,
  },
  "qwen-vl-plus": {
    context_window: 128 * k,
    max_input_tokens: 126 * k,
    max_output_tokens: 8 * k,
    image_input: true,
    video_input: true,
    thinking: "none",
    cache: "implicit",
    tool_calls: false,
  },
  "qwen3-max": {
    context_window: 256 * k,
    max_input_tokens: 252 * k,
    max_output_tokens: 64 * k,
    image_input: false,
    video_input: false,
    thinking: "hybrid",
    cache: "both",
    tool_calls: true,
  },
  "qwen-max": {
    context_window: 32 * k,
    max_input_tokens: 30 * k,
    max_output_tokens: 8 * k,
    image_input: false,
    video_input: false,
    thinking: "none",
    cache: "implicit",
    tool_calls: true,
  },
  "qwen-plus": {
    context_window: 128 * k,
    max_input_tokens: 126 * k,
    max_output_tokens: 16 * k,
    image_input: false,
    video_input: false,
    thinking: "hybrid",
    cache: "implicit",
    tool_calls: true,
  },
  "qwen-turbo": {
    context_window: 128 * k,
    max_input_tokens: 126 * k,
    max_output_tokens: 8 * k,
    image_input: false,
    video_input: false,
    thinking: "hybrid",
    cache: "implicit",
    tool_calls: true,
  },
  "qwen3-coder-plus": {
    context_window: 1_000_000,
    max_input_tokens: 1_000_000 - 64 * k,
    max_output_tokens: 64 * k,
    image_input: false,
    video_input: false,
    thinking: "none",
    cache: "implicit",
    tool_calls: true,
  },
  "qwen3.5-plus": {
    context_window: 1_000_000,
    max_input_tokens: 1_000_000 - 64 * k,
    max_output_tokens: 64 * k,
    image_input: true,
    video_input: false,
    thinking: "hybrid",
    cache: "explicit",
    tool_calls: true,
  },
  "qwen3.6-plus": {
    context_window: 1_000_000,
    max_input_tokens: 1_000_000 - 64 * k,
    max_output_tokens: 32 * k,
    image_input: true,
    video_input: false,
    thinking: "hybrid",
    cache: "explicit",
    tool_calls: true,
  },
  // The thinking-only families, known so that choosing one is refused with the reason
  // rather than as an undeclared model.
  "qwq-plus": {
    context_window: 128 * k,
    max_input_tokens: 96 * k,
    max_output_tokens: 8 * k,
    image_input: false,
    video_input: false,
    thinking: "only",
    cache: "none",
    tool_calls: true,
  },
  "qvq-max": {
    context_window: 128 * k,
    max_input_tokens: 96 * k,
    max_output_tokens: 8 * k,
    image_input: true,
    video_input: true,
    thinking: "only",
    cache: "none",
    tool_calls: false,
  },
};
