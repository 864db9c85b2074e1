/** What every route group under /e/{episode} gets: the episodes, the exchange pipeline, the tool validators, logging, time and ids. */
import type { EpisodeStore } from "../episodes/episode-store.ts";
import type { ExchangeDeps } from "../exchange/exchange-run.ts";
import type { ResponseStores } from "../ingress/responses/restored-responses.ts";
import type { Ids } from "../lib/ids.ts";
import type { Logger } from "../lib/logger.ts";
import type { ToolChecks } from "../mcp/tool-validators.ts";

export type RouteDeps = {
  episodes: EpisodeStore;
  exchange: ExchangeDeps;
  logger: Logger;
  clock: () => number;
  ids: Ids;
  /** The compiled argument validators of an episode's manifest (MCP tools/call). */
  toolChecks: ToolChecks;
  /** Each episode's stored Responses (previous_response_id, item_reference), rebuilt from its records. */
  responses: ResponseStores;
  /**
   * body_limit_bytes: the largest request body on every route, MCP included, so a call
   * delivered with large arguments can always be called back (the MCP SDK's own default is 4 MiB).
   */
  bodyLimitBytes?: number;
  /** mcp_progress_interval_ms: between two progress notifications of a held MCP tool call. */
  mcpProgressIntervalMs?: number;
};
