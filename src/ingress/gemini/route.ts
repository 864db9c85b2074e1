/**
 * Gemini GenerateContent for Gemini CLI, mounted under /e/{episode}/gemini
 * (GOOGLE_GEMINI_BASE_URL). Authenticate, classify the operation
 * (`classify-operation.ts` holds the model rule), then either answer countTokens
 * locally or hand the exchange to `runExchange`. Unsupported operations go
 * through `runExchange` too: `toHub` refuses them, so they are archived as a
 * failed exchange, the episode → provider_error, no upstream request. Any error
 * is answered in the Gemini envelope.
 */
import type { Hono } from "hono";
import type { BodyEnv } from "../../body/body-variables.ts";
import { wholeText } from "../../body/split-text.ts";
import { SidecarError } from "../../lib/errors.ts";
import { answerAuxiliary } from "../answer-auxiliary.ts";
import { authenticateRequest } from "../authenticate-ingress.ts";
import { requestedModel, servedModel } from "../episode-model.ts";
import type { IngressRouteDeps } from "../ingress-route-deps.ts";
import { createProtocolRoutes } from "../protocol-routes.ts";
import { recordedPath } from "../recorded-path.ts";
import { classifyGeminiOperation } from "./classify-operation.ts";
import { renderError } from "./errors.ts";
import { toGeminiModel, toGeminiModelList } from "./model-objects.ts";
import { toHub } from "./to-hub.ts";

export function createRoutes(deps: IngressRouteDeps): Hono<BodyEnv> {
  const routes = createProtocolRoutes(deps, {
    protocol: "gemini",
    renderError,
    /** Gemini CLI resends its system instruction (~30 KB) and tool list (~7 KB) unchanged every turn. */
    repeated: { members: ["systemInstruction", "tools"], history: "contents" },
  });

  routes.app.all("/gemini/*", async (c) => {
    // The pin and MCP checks wait for the operation: a model listing is not a model request.
    const episode = authenticateRequest(deps.episodes, c, { keyInQuery: true, modelRequest: false });
    const url = new URL(c.req.url);
    const operation = classifyGeminiOperation({
      method: c.req.method,
      path: url.pathname.slice(`/e/${episode.id}/gemini`.length),
      query: url.searchParams,
      episodeModel: episode.model,
    });
    if (operation.kind === "list_models")
      return c.json(toGeminiModelList([servedModel(episode, deps.exchange.models)]));
    if (operation.kind === "get_model")
      return c.json(toGeminiModel(requestedModel(episode, deps.exchange.models, operation.model)));
    episode.checkModelRequest(c.req.raw.headers);
    const body = await routes.body(c, episode);
    const path = recordedPath(url);
    if (operation.kind === "count_tokens") {
      const error = new SidecarError(
        "invalid_request",
        `countTokens is not supported for ${operation.model}: the sidecar does not count tokens; use a local estimate`,
      );
      const request = body.parsed ? body.value : wholeText(body.received);
      const entry = {
        protocol: "gemini" as const,
        operation: "countTokens",
        path,
        message: error.message,
        request,
      };
      return answerAuxiliary(deps.logger, episode, entry, error, renderError);
    }
    const ctx = { operation, deliveredArguments: (id: string) => episode.argumentsOf(id) };
    const streaming = operation.kind === "generate" && operation.sse;
    return routes.exchange(c, episode, body, () => toHub(body, ctx), streaming);
  });
  return routes.app;
}
