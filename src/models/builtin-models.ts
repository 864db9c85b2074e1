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

type Features = Omit<ModelCapabilities, "context_window" | "max_input_tokens" | "max_output_tokens">;

/** An entry from its limits in tokens (context window, largest prompt, largest output) and its features. */
function model(
  context_window: number,
  max_input_tokens: number,
  max_output_tokens: number,
  features: Features,
): ModelCapabilities {
  return { context_window, max_input_tokens, max_output_tokens, ...features };
}

const visionHybrid: Features = {
  image_input: true,
  video_input: true,
  thinking: "hybrid",
  cache: "implicit",
  tool_calls: true,
};
const visionWithoutTools: Features = {
  image_input: true,
  video_input: true,
  thinking: "none",
  cache: "implicit",
  tool_calls: false,
};
const textHybrid: Features = {
  image_input: false,
  video_input: false,
  thinking: "hybrid",
  cache: "implicit",
  tool_calls: true,
};
const textNonThinking: Features = {
  image_input: false,
  video_input: false,
  thinking: "none",
  cache: "implicit",
  tool_calls: true,
};
const imageHybridExplicitCache: Features = {
  image_input: true,
  video_input: false,
  thinking: "hybrid",
  cache: "explicit",
  tool_calls: true,
};

export const builtinModels: Readonly<Record<string, ModelCapabilities>> = {
  "qwen3-vl-plus": model(256 * k, 254 * k, 32 * k, visionHybrid),
  "qwen3-vl-flash": model(256 * k, 254 * k, 32 * k, visionHybrid),
  "qwen-vl-max": model(128 * k, 126 * k, 8 * k, visionWithoutTools),
  "qwen-vl-plus": model(128 * k, 126 * k, 8 * k, visionWithoutTools),
  "qwen3-max": model(256 * k, 252 * k, 64 * k, { ...textHybrid, cache: "both" }),
  "qwen-max": model(32 * k, 30 * k, 8 * k, textNonThinking),
  "qwen-plus": model(128 * k, 126 * k, 16 * k, textHybrid),
  "qwen-turbo": model(128 * k, 126 * k, 8 * k, textHybrid),
  "qwen3-coder-plus": model(1_000_000, 1_000_000 - 64 * k, 64 * k, textNonThinking),
  "qwen3.5-plus": model(1_000_000, 1_000_000 - 64 * k, 64 * k, imageHybridExplicitCache),
  "qwen3.6-plus": model(1_000_000, 1_000_000 - 64 * k, 32 * k, imageHybridExplicitCache),
  // The thinking-only families, known so that choosing one is refused with the reason
  // rather than as an undeclared model.
  "qwq-plus": model(128 * k, 96 * k, 8 * k, { ...textNonThinking, thinking: "only", cache: "none" }),
  "qvq-max": model(128 * k, 96 * k, 8 * k, { ...visionWithoutTools, thinking: "only", cache: "none" }),
};
