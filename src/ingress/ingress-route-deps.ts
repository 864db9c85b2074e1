/** What each client protocol's route group gets: the episodes, the exchange pipeline, logging, time, ids and the stored Responses. */
import type { EpisodeStore } from "../episodes/episode-store.ts";
import type { ExchangeDeps } from "../exchange/exchange-run.ts";
import type { Ids } from "../lib/ids.ts";
import type { Logger } from "../lib/logger.ts";
import type { ResponseStores } from "./responses/restored-responses.ts";

export type IngressRouteDeps = {
  episodes: EpisodeStore;
  exchange: ExchangeDeps;
  logger: Logger;
  clock: () => number;
  ids: Ids;
  /** Each episode's stored Responses (previous_response_id, item_reference), rebuilt from its records. */
  responses: ResponseStores;
};
