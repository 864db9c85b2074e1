/** What every ingress route needs: the episodes and the shared exchange pipeline. */
import type { EpisodeStore } from "../episodes/episode-store.ts";
import type { Ids } from "../episodes/ids.ts";
import type { ExchangeDeps } from "../exchange/run-exchange.ts";
import type { Logger } from "../lib/logger.ts";

export type IngressDeps = {
  episodes: EpisodeStore;
  exchange: ExchangeDeps;
  logger: Logger;
  clock: () => number;
  ids: Ids;
};
