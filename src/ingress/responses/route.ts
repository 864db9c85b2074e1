/**
 * OpenAI Responses routes for OpenCode and Codex CLI, mounted under /e/{episode}:
 *   POST /v1/responses          one model exchange, JSON or SSE (`stream: true`); a
 *                               `previous_response_id` or `item_reference` is resolved
 *                               from this episode's delivered responses (stored-responses.ts)
 *   GET  /v1/responses/{id}     a stored, delivered response of this episode, as delivered
 *                               (from its records: also after a restart)
 *   POST /v1/responses/compact  local, final 400 (auxiliary: no exchange, no turn)
 *   GET  /v1/models[/{id}]      the episode's model, OpenAI list/model objects with its
 *                               real limits (model-objects.ts); another id is a 404
 * The key comes as `Authorization: Bearer`. Everything else is the shared
 * exchange pipeline; any error is answered in the OpenAI envelope.
 */
import { Hono } from "hono";
import type { BodyEnv } from "../../body/body-variables.ts";
import { parseJsonBody, repeatedMembersPer } from "../../body/parse-json-body.ts";
import { receivedBody } from "../../body/received-body.ts";
import type { Episode } from "../../episodes/episode.ts";
import { asksForStream } from "../../exchange/keep-streaming-alive.ts";
import { runExchange } from "../../exchange/run-exchange.ts";
import { SidecarError, toSidecarError } from "../../lib/errors.ts";
import { answerAuxiliary } from "../answer-auxiliary.ts";
import { authenticateRequest } from "../authenticate-ingress.ts";
import { requestedModel, servedModel } from "../episode-model.ts";
import type { IngressRouteDeps } from "../ingress-route-deps.ts";
import { recordedPath } from "../recorded-path.ts";
import { renderError } from "./errors.ts";
import { toOpenAiModel, toOpenAiModelList } from "./model-objects.ts";
import { deliveredResponse } from "./stored-responses.ts";
import { toHub } from "./to-hub.ts";

/**
 * Remote compaction is OpenAI's service; Codex with a custom provider (as the kits
 * configure it) compacts with an ordinary /v1/responses request instead. Any
 * client that asks for it gets this final 400 at once, not a bare 404 or a retry.
 */
const compactMessage =
  "/responses/compact is not offered by this sidecar: compact with an ordinary /responses request (Codex does so with a custom model provider), or send the conversation in input";

export function createRoutes(deps: IngressRouteDeps): Hono<BodyEnv> {
  const app = new Hono<BodyEnv>();
  /** Codex resends its tool list (~21 KB of its ~45 KB request) unchanged every turn; per episode. */
  const repeatedOf = repeatedMembersPer<Episode>(["tools"], "input");
  app.onError((error) => renderError(toSidecarError(error)));
  const seconds = () => Math.floor(deps.clock() / 1000);

  app.post("/v1/responses/compact", async (c) => {
    const episode = authenticateRequest(deps.episodes, c);
    await receivedBody(c);
    const error = new SidecarError("invalid_request", compactMessage, { code: "unsupported_endpoint" });
    const entry = {
      protocol: "responses" as const,
      operation: "compact",
      path: recordedPath(new URL(c.req.url)),
    };
    return answerAuxiliary(deps.logger, episode, { ...entry, message: compactMessage }, error, renderError);
  });

  app.get("/v1/models", (c) => {
    const episode = authenticateRequest(deps.episodes, c, { modelRequest: false });
    return c.json(toOpenAiModelList([servedModel(episode, deps.exchange.models)]));
  });

  app.get("/v1/models/:id", (c) => {
    const episode = authenticateRequest(deps.episodes, c, { modelRequest: false });
    return c.json(toOpenAiModel(requestedModel(episode, deps.exchange.models, c.req.param("id"))));
  });

  app.get("/v1/responses/:id", (c) => {
    const episode = authenticateRequest(deps.episodes, c);
    const stored = deliveredResponse(deps.responses.of(episode), c.req.param("id"), "response_id");
    return c.json(stored.response);
  });

  app.post("/v1/responses", async (c) => {
    const episode = authenticateRequest(deps.episodes, c);
    const ctx = {
      createdAt: seconds(),
      now: seconds,
      newResponseId: () => deps.ids.callId().replace(/^call_/, "resp_"),
      store: () => deps.responses.of(episode),
    };
    const body = parseJsonBody(await receivedBody(c), repeatedOf(episode));
    return episode.track(
      runExchange(deps.exchange, {
        protocol: "responses",
        episode,
        path: recordedPath(new URL(c.req.url)),
        clientRequest: body,
        clientSession: episode.clientSessionOf(c.req.raw.headers),
        translate: () => toHub(body, ctx),
        renderError,
        clientSignal: c.req.raw.signal,
        streaming: asksForStream(body),
      }),
    );
  });

  return app;
}
