/**
 * Anthropic Messages routes for Claude Code, mounted under /e/{episode}:
 *   POST /anthropic/v1/messages[?beta=true]   one model exchange, JSON or SSE
 *   POST /anthropic/v1/messages/count_tokens  local, final 400 (auxiliary: no
 *     exchange, no turn) — Claude Code then uses its own estimate
 *   GET  /anthropic/v1/models[/{id}]          the episode's model as Anthropic ModelInfo
 *     with its real limits (model-objects.ts; Claude Code's gateway model discovery);
 *     another id is a 404
 * The key comes as `x-api-key` (ANTHROPIC_API_KEY) or `Authorization: Bearer`
 * (ANTHROPIC_AUTH_TOKEN). Everything else is the shared exchange pipeline; any
 * error is answered in the Anthropic envelope.
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
import { toAnthropicModel, toAnthropicModelPage } from "./model-objects.ts";
import { toHub } from "./to-hub.ts";

const countTokensMessage =
  "count_tokens is not offered by this sidecar (the upstream has no token counting endpoint); estimate the count locally";

function betaFlags(header: string | undefined): string[] {
  return (header ?? "")
    .split(",")
    .map((flag) => flag.trim())
    .filter((flag) => flag !== "");
}

export function createRoutes(deps: IngressRouteDeps): Hono<BodyEnv> {
  const app = new Hono<BodyEnv>();
  /** Claude Code resends its tool list (63 KB of its 77 KB request) and system prompt (6 KB) unchanged every turn; per episode. */
  const repeatedOf = repeatedMembersPer<Episode>(["tools", "system"], "messages");
  app.onError((error) => renderError(toSidecarError(error)));

  app.get("/anthropic/v1/models", (c) => {
    const episode = authenticateRequest(deps.episodes, c, { modelRequest: false });
    return c.json(toAnthropicModelPage([servedModel(episode, deps.exchange.models)]));
  });

  app.get("/anthropic/v1/models/:id", (c) => {
    const episode = authenticateRequest(deps.episodes, c, { modelRequest: false });
    return c.json(toAnthropicModel(requestedModel(episode, deps.exchange.models, c.req.param("id"))));
  });

  app.post("/anthropic/v1/messages/count_tokens", async (c) => {
    const episode = authenticateRequest(deps.episodes, c);
    await receivedBody(c);
    const error = new SidecarError("invalid_request", countTokensMessage);
    const entry = {
      protocol: "messages" as const,
      operation: "count_tokens",
      path: recordedPath(new URL(c.req.url)),
    };
    return answerAuxiliary(deps.logger, episode, { ...entry, message: error.message }, error, renderError);
  });

  app.post("/anthropic/v1/messages", async (c) => {
    const episode = authenticateRequest(deps.episodes, c);
    const body = parseJsonBody(await receivedBody(c), repeatedOf(episode));
    const ctx = { betaFlags: betaFlags(c.req.header("anthropic-beta")) };
    return episode.track(
      runExchange(deps.exchange, {
        protocol: "messages",
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
