/**
 * The route groups mounted under /e/{episode}: one per ingress protocol and the
 * MCP server, each with the paths it serves and the form it takes request bodies
 * in (a model route's split while it arrives, the MCP transport's from the raw
 * request). Each module owns its routes; this list is the only place they meet.
 */
import * as gemini from "../ingress/gemini/route.ts";
import * as messages from "../ingress/messages/route.ts";
import * as responses from "../ingress/responses/route.ts";
import { createMcpRoutes } from "../mcp/mcp-routes.ts";
import type { EpisodeRouteGroup } from "./app.ts";

export const episodeRouteGroups: readonly EpisodeRouteGroup[] = [
  { paths: "/mcp", body: "raw", routes: createMcpRoutes },
  { paths: "/anthropic/*", body: "split", routes: messages.createRoutes },
  { paths: "/v1/*", body: "split", routes: responses.createRoutes },
  { paths: "/gemini/*", body: "split", routes: gemini.createRoutes },
];
