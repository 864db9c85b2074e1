/**
 * The route groups mounted under /e/{episode}: one per ingress protocol and the
 * MCP server. Each module owns its routes; this list is the only place they meet.
 */
import type { Hono } from "hono";
import { createGeminiRoutes } from "../ingress/gemini/route.ts";
import { createMessagesRoutes } from "../ingress/messages/route.ts";
import { createResponsesRoutes } from "../ingress/responses/route.ts";
import { createMcpRoutes } from "../mcp/mcp-routes.ts";
import type { RouteDeps } from "./route-deps.ts";

export const episodeRouteGroups: ((deps: RouteDeps) => Hono)[] = [
  createMcpRoutes,
  createMessagesRoutes,
  createResponsesRoutes,
  createGeminiRoutes,
];
