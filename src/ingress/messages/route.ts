/**
 * Anthropic Messages routes for Claude Code, mounted under /e/{episode}:
 *   POST /anthropic/v1/messages[?beta=true]   one model exchange, JSON or SSE
 *   POST /anthropic/v1/messages/count_tokens  local, final 400 (auxiliary: no
 *     exchange, no turn) — Claude Code then uses its own estimate
 * The key comes as `x-api-key` (ANTHROPIC_API_KEY) or `Authorization: Bearer`
 * (ANTHROPIC_AUTH_TOKEN). Everything else is the shared exchange pipeline.
 */

import type { Context } from "hono";
import { Hono } from "hono";
import type { Episode } from "../../episodes/episode.ts";
import { runExchange } from "../../exchange/run-exchange.ts";
import { SidecarError, toSidecarError } from "../../lib/errors.ts";
import { parseJsonBody } from "../../lib/parse-json-body.ts";
import type { RouteDeps } from "../../server/route-deps.ts";
import { authenticateIngress } from "../authenticate-ingress.ts";
import { renderMessagesError } from "./errors.ts";
import { toMessagesResponse } from "./from-hub.ts";
import { renderMessagesStream } from "./stream.ts";
import { messagesToHub } from "./to-hub.ts";

const countTokensMessage =
  "count_tokens is not offered by this sidecar (the upstream has no token counting endpoint); estimate the count locally";

function betaFlags(header: string | undefined): string[] {
  return (header ?? "")
    .split(",")
    .map((flag) => flag.trim())
    .filter((flag) => flag !== "");
}

function requestPath(c: Context): string {
  const url = new URL(c.req.url);
  return `${url.pathname}${url.search}`;
}

export function createMessagesRoutes(deps: RouteDeps): Hono {
  const app = new Hono();
  const authenticate = (c: Context): Episode =>
    authenticateIngress(deps.episodes, c.req.param("episode") ?? "", c.req.raw.headers);

  app.post("/anthropic/v1/messages/count_tokens", async (c) => {
    let episode: Episode;
    try {
      episode = authenticate(c);
    } catch (error) {
      return renderMessagesError(toSidecarError(error));
    }
    await c.req.text();
    const path = requestPath(c);
    episode.counters.auxiliary_responses += 1;
    episode.records.auxiliary({
      path,
      status: 400,
      protocol: "messages",
      operation: "count_tokens",
      message: countTokensMessage,
    });
    episode.persist();
    deps.logger.info("auxiliary response", { episode: episode.id, path, status: 400 });
    return renderMessagesError(new SidecarError("invalid_request", countTokensMessage));
  });

  app.post("/anthropic/v1/messages", async (c) => {
    let episode: Episode;
    try {
      episode = authenticate(c);
    } catch (error) {
      return renderMessagesError(toSidecarError(error));
    }
    const body = parseJsonBody(await c.req.text());
    const context = { betaFlags: betaFlags(c.req.header("anthropic-beta")) };
    const stream =
      body.parsed &&
      typeof body.value === "object" &&
      body.value !== null &&
      (body.value as { stream?: unknown }).stream === true;
    return episode.track(
      runExchange(deps.exchange, {
        protocol: "messages",
        episode,
        path: requestPath(c),
        clientRequest: body,
        translate: () => {
          if (!body.parsed) throw new SidecarError("invalid_request", body.reason, { param: "body" });
          return messagesToHub(body.value, context);
        },
        render: (response, request) =>
          stream
            ? {
                contentType: "text/event-stream; charset=utf-8",
                chunks: renderMessagesStream(response, request),
              }
            : {
                contentType: "application/json",
                chunks: [JSON.stringify(toMessagesResponse(response, request))],
              },
        renderError: renderMessagesError,
        clientSignal: c.req.raw.signal,
      }),
    );
  });

  return app;
}
