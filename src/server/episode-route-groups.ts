/**
 * The route groups mounted under /e/{episode}: one per ingress protocol and the
 * MCP server. Each module owns its routes; this list is the only place they meet.
 */
import type { Hono } from "hono";
import * as gemini from "../ingress/gemini/route.ts";
import * as messages from "../ingress/messages/route.ts";
import * as responses from "../ingress/responses/route.ts";
import { createMcpRoutes } from "../mcp/mcp-routes.ts";
import type { RouteDeps } from "./route-deps.ts";

export const episodeRouteGroups: ((deps: RouteDeps) => Hono)[] = [
  createMcpRoutes,
  messages.createRoutes,
  responses.createRoutes,
  gemini.createRoutes,
];
