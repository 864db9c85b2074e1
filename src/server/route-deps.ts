/** What the route groups under /e/{episode} get, together: each protocol's (ingress) and the MCP server's. */
import type { IngressRouteDeps } from "../ingress/ingress-route-deps.ts";
import type { McpRouteDeps } from "../mcp/mcp-routes.ts";

export type RouteDeps = IngressRouteDeps & McpRouteDeps;
