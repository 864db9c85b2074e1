/**
 * The graceful shutdown of the app, in the order that keeps robot work and records
 * safe: stop accepting new work, cancel upstream requests and retry waits, stop
 * shipping, drain handlers and admitted callbacks up to the deadline (past it, ask
 * the executor to stop the jobs still in flight of episodes whose manifest says
 * `stop`, and journal its answers), freeze the records, then let go of the socket, the image workers and the trace exporter.
 * The exit code is 0 when everything drained and froze, 3 when the drain overran
 * its deadline or records could not be frozen (a cleanup failure, logged). A second
 * call waits for the first.
 */
import type { Episode } from "../episodes/episode.ts";
import { errorMessage } from "../lib/error-message.ts";
import type { Logger } from "../lib/logger.ts";
import { drainEpisodes, freezeEpisodes } from "./drain-episodes.ts";

export type ShutdownDeps = {
  episodes: { stopAccepting(): void; list(): Episode[] };
  logger: Logger;
  clock: () => number;
  drainDeadlineMs: number;
  /** Cancels upstream requests and retry waits. */
  cancelUpstream: (reason: Error) => void;
  stopShipping?: () => void;
  /** Stops the listening socket (and lets go of the data directory) once the records are frozen. */
  stopServer?: () => void;
  closeConverter?: () => Promise<void>;
  /** Exports the spans still buffered. */
  flushTraces?: () => Promise<void>;
};

export type Shutdown = {
  shutdown(reason: string): Promise<number>;
  /** Resolves with the exit code once a shutdown has finished. */
  closed: Promise<number>;
  readonly shuttingDown: boolean;
};

export function createShutdown(deps: ShutdownDeps): Shutdown {
  const { episodes, logger } = deps;
  let shuttingDown = false;
  const closed = Promise.withResolvers<number>();

  async function shutdown(reason: string): Promise<number> {
    if (shuttingDown) return closed.promise;
    shuttingDown = true;
    // Order matters: refuse new work first, then cancel upstream requests and retry waits, then wait.
    episodes.stopAccepting();
    logger.info("shutting down", { reason, drain_deadline_ms: deps.drainDeadlineMs });
    deps.cancelUpstream(new Error(`shutdown: ${reason}`));
    deps.stopShipping?.();
    const all = episodes.list();
    const drain = await drainEpisodes(all, { deadlineMs: deps.drainDeadlineMs, clock: deps.clock });
    // Before the records freeze, so each stop and its answer are journaled.
    if (!drain.complete) await Promise.all(all.map((episode) => episode.stopJobs("drain_overrun")));
    let frozeAll = true;
    try {
      freezeEpisodes(all, drain, reason);
    } catch (error) {
      frozeAll = false;
      logger.error("cleanup failure: records could not be frozen", { message: errorMessage(error) });
    }
    deps.stopServer?.();
    if (!drain.complete) {
      logger.error("cleanup failure: drain overran its deadline; records are frozen with complete:false", {
        deadline_ms: drain.deadlineMs,
        unfinished_calls: Object.fromEntries(drain.unfinishedCalls),
        pending_handlers: Object.fromEntries(drain.pendingHandlers),
      });
    } else logger.info("shutdown complete", { drain_ms: drain.elapsedMs, episodes: all.length });
    const code = drain.complete && frozeAll ? 0 : 3;
    await deps.closeConverter?.();
    await deps
      .flushTraces?.()
      .catch((error: Error) =>
        logger.warn("traces could not be exported at shutdown", { message: error.message }),
      );
    closed.resolve(code);
    return code;
  }

  return {
    shutdown,
    closed: closed.promise,
    get shuttingDown() {
      return shuttingDown;
    },
  };
}
