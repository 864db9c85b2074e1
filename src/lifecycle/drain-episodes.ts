/**
 * The drain and freeze steps of a graceful shutdown. Draining closes every
 * episode's ledger (later callbacks get a ledger refusal; calls still waiting for
 * their batch order fail without running) and waits, up to a deadline, until
 * every admitted call has a receipt or a failure and every tracked handler has
 * settled — including handlers that started while the drain was under way.
 * Freezing writes each episode's final marker (frozen.json): a drain that
 * overran its deadline is recorded as `complete: false` with what was still
 * running, so the records never claim to be complete when they may not be.
 */
import type { Episode } from "../episodes/episode.ts";

export type DrainOutcome = {
  /** True when everything finished before the deadline. */
  complete: boolean;
  elapsedMs: number;
  deadlineMs: number;
  /** Per episode id: admitted calls without a receipt or failure when the drain ended. */
  unfinishedCalls: Map<string, readonly string[]>;
  /** Per episode id: handlers (model exchanges, receipts) still running when the drain ended. */
  pendingHandlers: Map<string, number>;
};

export async function drainEpisodes(
  episodes: readonly Episode[],
  options: { deadlineMs: number; clock?: () => number },
): Promise<DrainOutcome> {
  const clock = options.clock ?? Date.now;
  const started = clock();
  for (const episode of episodes) episode.ledger.close("the sidecar is shutting down");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<"deadline">((resolve) => {
    timer = setTimeout(() => resolve("deadline"), options.deadlineMs);
  });
  const all = Promise.all(episodes.map(settleEpisode)).then(() => "drained" as const);
  const outcome = await Promise.race([all, deadline]);
  clearTimeout(timer);
  const unfinishedCalls = new Map<string, readonly string[]>();
  const pendingHandlers = new Map<string, number>();
  for (const episode of episodes) {
    const unfinished = callsRunHere(episode);
    if (unfinished.length > 0) unfinishedCalls.set(episode.id, unfinished);
    const handlers = episode.handlersInFlight();
    if (handlers > 0) pendingHandlers.set(episode.id, handlers);
  }
  return {
    complete: outcome === "drained" && unfinishedCalls.size === 0 && pendingHandlers.size === 0,
    elapsedMs: clock() - started,
    deadlineMs: options.deadlineMs,
    unfinishedCalls,
    pendingHandlers,
  };
}

/**
 * Unfinished calls this process admitted. A restored ledger's unfinished calls are
 * uncertain calls of an earlier process: nothing here runs them, so nothing waits for them.
 */
function callsRunHere(episode: Episode): readonly string[] {
  const summary = episode.ledger.summary();
  return summary.interrupted ? [] : summary.unfinished;
}

/** Resolves when the episode's admitted calls and handlers are all done. */
async function settleEpisode(episode: Episode): Promise<void> {
  const ledger = episode.ledger.summary().interrupted ? Promise.resolve() : episode.ledger.drain();
  await episode.handlersSettled();
  await ledger;
  // A receipt may have started one more handler (none do today); settle again if so.
  if (episode.handlersInFlight() > 0) await settleEpisode(episode);
}

/** Writes every episode's final marker; returns the markers by episode id. */
export function freezeEpisodes(
  episodes: readonly Episode[],
  drain: DrainOutcome,
  reason: string,
): Map<string, Record<string, unknown>> {
  const markers = new Map<string, Record<string, unknown>>();
  for (const episode of episodes) {
    // A delivery still being written when the drain ended can no longer be confirmed: its calls are revoked.
    episode.revokeDeliveries("the sidecar shut down before the delivery completed");
    const unfinished = drain.unfinishedCalls.get(episode.id) ?? [];
    const pending = drain.pendingHandlers.get(episode.id) ?? 0;
    const complete = unfinished.length === 0 && pending === 0;
    const marker = {
      reason,
      drain: drain.complete ? "complete" : "deadline_overrun",
      /** Whether this episode's records hold everything: false when its drain did not finish. */
      complete,
      unfinished,
      pending_handlers: pending,
      drain_ms: drain.elapsedMs,
      drain_deadline_ms: drain.deadlineMs,
      state: episode.state,
    };
    episode.persist();
    episode.records.freeze(marker);
    markers.set(episode.id, marker);
  }
  return markers;
}
