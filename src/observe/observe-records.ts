/**
 * Wraps an episode's records so each write is also an observed event (after it
 * was written: an event means the record exists) and each failed write is a
 * `records_failure` event before the error goes on to the caller.
 */

import type { LedgerEvent } from "../ledger/events.ts";
import { errorMessage } from "../lib/error-message.ts";
import type { EpisodeRecords } from "../records/episode-records.ts";
import { exchangeVerbs, type WriteExchangeLine } from "../records/exchange-verbs.ts";
import type { Observer } from "./observer.ts";

export function observeRecords(
  records: EpisodeRecords,
  episode: string,
  observer: Observer,
  clock: () => number,
): EpisodeRecords {
  const guarded = <T>(file: string, write: () => T): T => {
    try {
      return write();
    } catch (error) {
      observer.observe({ kind: "records_failure", episode, file, message: errorMessage(error) });
      throw error;
    }
  };
  const exchangeLine: WriteExchangeLine = (exchange, line, spliced) => {
    guarded("exchanges.jsonl", () => records.exchangeLine(exchange, line, spliced));
    observer.observe({ kind: "exchange_stage", episode, exchange, at: clock(), line });
  };
  // Inherits from the records so every other member, getters included (frozen,
  // failure), reads the live value; only the writes are wrapped.
  const observed: EpisodeRecords = Object.create(records);
  return Object.assign(observed, {
    exchangeLine,
    ...exchangeVerbs(exchangeLine),
    ledger(event: LedgerEvent) {
      guarded("ledger.jsonl", () => records.ledger(event));
      observer.observe({ kind: "ledger", episode, at: clock(), event });
    },
    auxiliary(data: Record<string, unknown>) {
      guarded("auxiliary.jsonl", () => records.auxiliary(data));
      observer.observe({ kind: "auxiliary", episode, at: clock(), data });
    },
    describe(description: unknown) {
      guarded("episode.json", () => records.describe(description));
    },
    describeInBackground(description: unknown) {
      return records.describeInBackground(description).catch((error: Error) => {
        observer.observe({ kind: "records_failure", episode, file: "episode.json", message: error.message });
        throw error;
      });
    },
    freeze(marker: Record<string, unknown>) {
      guarded("frozen.json", () => records.freeze(marker));
    },
  });
}
