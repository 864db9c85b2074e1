/**
 * The turn an exchange holds: one of the episode's max_turns, reserved before
 * anything goes upstream (so exchanges in flight together cannot overrun it) and
 * given back once, by the exchange's outcome: delivered (the turn counts), revoked
 * or failed. A value the later stages carry, not a flag beside them.
 */
import type { Episode } from "../episodes/episode.ts";
import { SidecarError } from "../lib/errors.ts";

export interface Turn {
  /** Every byte of the answer was handed to the server: the turn counts, the batch's calls may run. */
  delivered(batchId: string | undefined): void;
  /** The client went away during delivery: the batch's calls can never run. */
  revoked(batchId: string | undefined): void;
  /** Failed before delivery; a provider failure also ends the episode's model work. */
  failed(providerError: string | undefined): void;
}

/** Throws SidecarError `episode_closed` when the episode runs no further exchange or has no turn left. */
export function reserveTurn(episode: Episode): Turn {
  const closed = episode.closedReason();
  if (closed) {
    if (episode.state === "running") episode.fail("max_turns", closed);
    throw new SidecarError("episode_closed", closed);
  }
  if (!episode.reserveTurn()) {
    throw new SidecarError(
      "episode_closed",
      `episode ${episode.id} has all of its max_turns (${episode.maxTurns}) delivered or held by exchanges in flight; this exchange is not run`,
    );
  }
  let held = true;
  const giveBack = (settle: () => void) => {
    if (!held) return;
    held = false;
    settle();
  };
  return {
    delivered: (batchId) => giveBack(() => episode.exchangeDelivered(batchId)),
    revoked: (batchId) => giveBack(() => episode.exchangeRevoked(batchId)),
    failed: (providerError) =>
      giveBack(() =>
        episode.exchangeFailed({ heldTurn: true, ...(providerError === undefined ? {} : { providerError }) }),
      ),
  };
}
