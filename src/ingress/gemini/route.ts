/**
 * Gemini GenerateContent for Gemini CLI, mounted under /e/{episode}/gemini
 * (GOOGLE_GEMINI_BASE_URL). Thin: authenticate, classify the operation
 * (`classify-operation.ts` holds the model rule), then either answer countTokens
 * locally or hand the exchange to `runExchange` with this protocol's translator,
 * renderers and error envelope. Unsupported operations go through `runExchange`
 * too, as a refusal: archived as a failed exchange, episode → provider_error,
 * no upstream request.
 */
import { Hono } from "hono";
import type { Episode } from "../../episodes/episode.ts";
import { type Rendered, runExchange } from "../../exchange/run-exchange.ts";
import type { HubResponse } from "../../hub/schema.ts";
import { SidecarError, toSidecarError } from "../../lib/errors.ts";
import { type JsonBody, parseJsonBody } from "../../lib/parse-json-body.ts";
import type { RouteDeps } from "../../server/route-deps.ts";
import { authenticateIngress } from "../authenticate-ingress.ts";
import { classifyGeminiOperation, type GeminiOperation } from "./classify-operation.ts";
import { renderGeminiError } from "./errors.ts";
import { hubToGeminiResponse } from "./from-hub.ts";
import { geminiStreamChunks, renderGeminiSse } from "./stream.ts";
import { geminiToHub } from "./to-hub.ts";

/** The request path as recorded: below the episode, without an API key in the query. */
function recordedPath(url: URL, base: string): string {
  const query = new URLSearchParams(url.searchParams);
  query.delete("key");
  const search = query.size > 0 ? `?${query}` : "";
  return `${url.pathname.slice(base.length)}${search}`;
}

function renderFor(operation: GeminiOperation, response: HubResponse): Rendered {
  if (operation.kind === "generate" && operation.sse)
    return { contentType: "text/event-stream", chunks: renderGeminiSse(response) };
  if (operation.kind === "generate" && operation.stream) {
    return { contentType: "application/json", chunks: [JSON.stringify(geminiStreamChunks(response))] };
  }
  return { contentType: "application/json", chunks: [JSON.stringify(hubToGeminiResponse(response))] };
}

/** countTokens: a local, final 400 so the CLI uses its own estimate. Not an exchange, not a turn. */
function answerCountTokens(
  deps: RouteDeps,
  episode: Episode,
  path: string,
  model: string,
  body: JsonBody,
): Response {
  const error = new SidecarError(
    "invalid_request",
    `countTokens is not supported for ${model}: the sidecar does not count tokens; use a local estimate`,
  );
  episode.counters.auxiliary_responses += 1;
  episode.records.auxiliary({
    protocol: "gemini",
    operation: "countTokens",
    path,
    status: error.status,
    message: error.message,
    request: body.parsed ? body.value : body.text,
  });
  episode.persist();
  deps.logger.info("auxiliary response", { episode: episode.id, path, status: error.status });
  return renderGeminiError(error);
}

export function createGeminiRoutes(deps: RouteDeps): Hono {
  const app = new Hono();
  /** Qwen's arguments text per delivered call id, per episode (see `DeliveredArguments`). */
  const deliveredArguments = new WeakMap<Episode, Map<string, string>>();
  const argumentsOf = (episode: Episode) => {
    let known = deliveredArguments.get(episode);
    if (!known) {
      known = new Map();
      deliveredArguments.set(episode, known);
    }
    return known;
  };
  app.all("/gemini/*", async (c) => {
    const url = new URL(c.req.url);
    const episodeId = c.req.param("episode") ?? "";
    try {
      const episode = authenticateIngress(deps.episodes, episodeId, c.req.raw.headers, url.searchParams);
      const base = `/e/${episode.id}`;
      const operation = classifyGeminiOperation({
        method: c.req.method,
        path: url.pathname.slice(`${base}/gemini`.length),
        query: url.searchParams,
        episodeModel: episode.model,
      });
      const body = parseJsonBody(await c.req.text());
      const path = recordedPath(url, base);
      if (operation.kind === "count_tokens")
        return answerCountTokens(deps, episode, path, operation.model, body);
      // The episode's failure keeps the plain reason; only the client is also told what the refusal did.
      const refusal =
        operation.kind === "unsupported"
          ? new SidecarError("invalid_request", operation.reason, { episodeFatal: true })
          : undefined;
      return await episode.track(
        runExchange(deps.exchange, {
          protocol: "gemini",
          episode,
          path,
          clientRequest: body,
          translate: () => {
            if (!body.parsed) throw new SidecarError("invalid_request", body.reason, { param: "(body)" });
            const known = argumentsOf(episode);
            return geminiToHub(
              body.value,
              operation.kind === "generate" ? operation.model : episode.model,
              (id) => known.get(id),
            );
          },
          render: (response) => {
            const rendered = renderFor(operation, response);
            const known = argumentsOf(episode);
            for (const call of response.toolCalls) known.set(call.id, call.arguments);
            return rendered;
          },
          renderError: (error) =>
            renderGeminiError(
              error === refusal
                ? new SidecarError(
                    error.kind,
                    `${error.message}. The episode is now in provider_error; no upstream request was made.`,
                  )
                : error,
            ),
          clientSignal: c.req.raw.signal,
          ...(refusal ? { refuse: refusal } : {}),
        }),
      );
    } catch (error) {
      return renderGeminiError(toSidecarError(error));
    }
  });
  return app;
}
