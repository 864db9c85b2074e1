/**
 * Which Gemini operation a request under `/e/{episode}/gemini` asks for, and
 * whether the sidecar serves it (pure).
 *
 * The model rule: an episode serves exactly one model name, the episode's own
 * `model` (episode option `model`, default `upstream.model`), which its launcher
 * passes to `gemini -m`. Comparing with a fixed name — not with the first name seen — keeps
 * the rule independent of request order: without `-m`, Gemini CLI's first call is
 * a classifier call to one of Google's flash-lite models, which must not become
 * the episode's model. So:
 *   POST models/{model}:generateContent          → JSON exchange
 *   POST models/{model}:streamGenerateContent    → SSE exchange (`alt=sse`; without
 *                                                   it a JSON array, as Google does)
 *   POST models/{model}:countTokens              → local 400, an auxiliary response
 *   GET  models                                  → models.list: the episode's model
 *   GET  models/{model}                          → models.get (another name: 404)
 * and everything else — another model name (the CLI's classifier or utility
 * models), file uploads, `cachedContents`, embeddings, any other path or method —
 * is unsupported: archived as a failed exchange that puts the episode in
 * `provider_error` before any upstream request.
 * Spec: https://ai.google.dev/api/generate-content
 */
export type GeminiOperation =
  | { kind: "generate"; model: string; stream: boolean; sse: boolean }
  | { kind: "count_tokens"; model: string }
  | { kind: "list_models" }
  | { kind: "get_model"; model: string }
  | { kind: "unsupported"; reason: string };

const modelsPath = /^\/(v1beta|v1|v1alpha)\/models\/(.+)$/;
const listPath = /^\/(v1beta|v1|v1alpha)\/models\/?$/;

export function classifyGeminiOperation(input: {
  method: string;
  /** Path below the Gemini base URL, e.g. `/v1beta/models/x:streamGenerateContent`. */
  path: string;
  query: URLSearchParams;
  episodeModel: string;
}): GeminiOperation {
  const what = `${input.method} ${input.path}`;
  const served = `only POST …/models/${input.episodeModel}:{generateContent,streamGenerateContent,countTokens} is served`;
  const match = modelsPath.exec(input.path);
  const modelAction = match?.[2] === undefined ? undefined : safeDecode(match[2]);
  if (input.method === "GET" && listPath.test(input.path)) return { kind: "list_models" };
  if (input.method === "GET" && modelAction !== undefined && !modelAction.includes(":"))
    return { kind: "get_model", model: modelAction };
  const colon = modelAction?.lastIndexOf(":") ?? -1;
  if (input.method !== "POST" || modelAction === undefined || colon <= 0) {
    return { kind: "unsupported", reason: `${what} is not supported by the sidecar (${served})` };
  }
  const model = modelAction.slice(0, colon);
  const action = modelAction.slice(colon + 1);
  if (model !== input.episodeModel) {
    return {
      kind: "unsupported",
      reason: `model ${JSON.stringify(model)} is not this episode's model ${JSON.stringify(input.episodeModel)} (launch Gemini CLI with -m ${input.episodeModel}); ${served}`,
    };
  }
  switch (action) {
    case "generateContent":
      return { kind: "generate", model, stream: false, sse: false };
    case "streamGenerateContent":
      return { kind: "generate", model, stream: true, sse: input.query.get("alt") === "sse" };
    case "countTokens":
      return { kind: "count_tokens", model };
    default:
      return {
        kind: "unsupported",
        reason: `${what}: operation ${JSON.stringify(action)} is not supported by the sidecar (${served})`,
      };
  }
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
