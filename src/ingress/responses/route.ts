/**
 * OpenAI Responses route for OpenCode and Codex CLI, mounted under /e/{episode}:
 *   POST /v1/responses/compact   a final 400 (remote compaction is not offered)
 *   POST /v1/responses   one model exchange, JSON or SSE (`stream: true`); a
 *                        `previous_response_id` or `item_reference` is resolved
 *                        from this episode's delivered responses (stored-responses.ts)
 * The key comes as `Authorization: Bearer`. Everything else is the shared
 * exchange pipeline; this file only wires parse → translate → render.
 */
import type { Context } from "hono";
import { Hono } from "hono";
import type { Episode } from "../../episodes/episode.ts";
import { runExchange } from "../../exchange/run-exchange.ts";
import { SidecarError, toSidecarError } from "../../lib/errors.ts";
import { parseJsonBody } from "../../lib/parse-json-body.ts";
import type { RouteDeps } from "../../server/route-deps.ts";
import { authenticateIngress } from "../authenticate-ingress.ts";
import { renderResponsesError } from "./errors.ts";
import { type RenderContext, toOutputItems, toResponseObject } from "./from-hub.ts";
import { parseResponsesRequest } from "./parse-request.ts";
import { readTools } from "./read-tools.ts";
import type { InputItem, ResponsesRequest } from "./schema.ts";
import { resolveStoredInput, responseStoreOf } from "./stored-responses.ts";
import { renderStream } from "./stream.ts";
import { toHub } from "./to-hub.ts";

/**
 * Remote compaction is OpenAI's service; Codex with a custom provider (as the kits
 * configure it) compacts with an ordinary /v1/responses request instead. Any
 * client that asks for it gets this final 400 at once, not a bare 404 or a retry.
 */
const compactMessage =
  "/responses/compact is not offered by this sidecar: compact with an ordinary /responses request (Codex does so with a custom model provider), or send the conversation in input";

export function createResponsesRoutes(deps: RouteDeps): Hono {
  const app = new Hono();
  const seconds = () => Math.floor(deps.clock() / 1000);

  app.post("/v1/responses/compact", async (c: Context) => {
    let episode: Episode;
    try {
      episode = authenticateIngress(deps.episodes, c.req.param("episode") ?? "", c.req.raw.headers);
    } catch (error) {
      return renderResponsesError(toSidecarError(error));
    }
    await c.req.text();
    const path = new URL(c.req.url).pathname;
    episode.counters.auxiliary_responses += 1;
    episode.records.auxiliary({
      path,
      status: 400,
      protocol: "responses",
      operation: "compact",
      message: compactMessage,
    });
    episode.persist();
    deps.logger.info("auxiliary response", { episode: episode.id, path, status: 400 });
    return renderResponsesError(
      new SidecarError("invalid_request", compactMessage, { code: "unsupported_endpoint" }),
    );
  });

  app.post("/v1/responses", async (c: Context) => {
    let episode: Episode;
    try {
      episode = authenticateIngress(deps.episodes, c.req.param("episode") ?? "", c.req.raw.headers);
    } catch (error) {
      return renderResponsesError(toSidecarError(error));
    }
    const createdAt = seconds();
    const body = parseJsonBody(await c.req.text());
    let request: ResponsesRequest | undefined;
    const store = responseStoreOf(episode);
    let effectiveInput: InputItem[] = [];
    let settleStored: ((outcome: "delivered" | "revoked") => void) | undefined;
    return episode.track(
      runExchange(deps.exchange, {
        protocol: "responses",
        episode,
        path: new URL(c.req.url).pathname,
        clientRequest: body,
        translate: () => {
          if (!body.parsed) throw new SidecarError("invalid_request", body.reason, { param: "body" });
          request = parseResponsesRequest(body.value);
          const input = resolveStoredInput(request, store);
          effectiveInput =
            typeof input === "string" ? [{ type: "message", role: "user", content: input }] : input;
          return toHub({ ...request, input, previous_response_id: undefined });
        },
        render: (response) => {
          if (!request) throw new SidecarError("internal", "render before translate");
          const tools = readTools(request.tools ?? []);
          const ctx: RenderContext = {
            responseId: deps.ids.callId().replace(/^call_/, "resp_"),
            createdAt,
            completedAt: seconds(),
            request,
            offeredTools: tools.offered,
            names: tools.names,
          };
          store.put(ctx.responseId, effectiveInput, toOutputItems(response, ctx), request.store !== false);
          settleStored = (outcome) => store.settle(ctx.responseId, outcome);
          return request.stream
            ? { contentType: "text/event-stream; charset=utf-8", chunks: renderStream(response, ctx) }
            : { contentType: "application/json", chunks: [JSON.stringify(toResponseObject(response, ctx))] };
        },
        onSettled: (outcome) => settleStored?.(outcome),
        renderError: renderResponsesError,
        clientSignal: c.req.raw.signal,
      }),
    );
  });

  return app;
}
