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
import type { Hono } from "hono";
import type { BodyEnv } from "../../body/body-variables.ts";
import { SidecarError } from "../../lib/errors.ts";
import { authenticateRequest } from "../authenticate-ingress.ts";
import type { IngressRouteDeps } from "../ingress-route-deps.ts";
import { createProtocolRoutes } from "../protocol-routes.ts";
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
  const routes = createProtocolRoutes(deps, {
    protocol: "responses",
    renderError,
    /** Codex resends its tool list (~21 KB of its ~45 KB request) unchanged every turn. */
    repeated: { members: ["tools"], history: "input" },
  });
  const seconds = () => Math.floor(deps.clock() / 1000);
  routes.refuse(
    "/v1/responses/compact",
    "compact",
    () => new SidecarError("invalid_request", compactMessage, { code: "unsupported_endpoint" }),
  );
  routes.models("/v1/models", toOpenAiModelList, toOpenAiModel);

  routes.app.get("/v1/responses/:id", (c) => {
    const episode = authenticateRequest(deps.episodes, c);
    const stored = deliveredResponse(deps.responses.of(episode), c.req.param("id"), "response_id");
    return c.json(stored.response);
  });

  routes.app.post("/v1/responses", async (c) => {
    const episode = authenticateRequest(deps.episodes, c);
    const ctx = {
      createdAt: seconds(),
      now: seconds,
      newResponseId: () => deps.ids.callId().replace(/^call_/, "resp_"),
      store: () => deps.responses.of(episode),
    };
    const body = await routes.body(c, episode);
    return routes.exchange(c, episode, body, () => toHub(body, ctx));
  });
  return routes.app;
}
