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
import type { Hono } from "hono";
import type { BodyEnv } from "../../body/body-variables.ts";
import { SidecarError } from "../../lib/errors.ts";
import { authenticateRequest } from "../authenticate-ingress.ts";
import type { IngressRouteDeps } from "../ingress-route-deps.ts";
import { createProtocolRoutes } from "../protocol-routes.ts";
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
  const routes = createProtocolRoutes(deps, {
    protocol: "messages",
    renderError,
    /** Claude Code resends its tool list (63 KB of its 77 KB request) and system prompt (6 KB) unchanged every turn. */
    repeated: { members: ["tools", "system"], history: "messages" },
  });
  routes.models("/anthropic/v1/models", toAnthropicModelPage, toAnthropicModel);
  routes.refuse(
    "/anthropic/v1/messages/count_tokens",
    "count_tokens",
    () => new SidecarError("invalid_request", countTokensMessage),
  );
  routes.app.post("/anthropic/v1/messages", async (c) => {
    const episode = authenticateRequest(deps.episodes, c);
    const body = await routes.body(c, episode);
    const ctx = { betaFlags: betaFlags(c.req.header("anthropic-beta")) };
    return routes.exchange(c, episode, body, () => toHub(body, ctx));
  });
  return routes.app;
}
