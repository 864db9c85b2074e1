/**
 * Wraps an episode's records so each write is also an observed event (after it
 * was written: an event means the record exists) and each failed write is a
 * `records_failure` event before the error goes on to the caller.
 */
import type { EpisodeRecords } from "../records/episode-records.ts";
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
      observer.observe({ kind: "records_failure", episode, file, message: (error as Error).message });
      throw error;
    }
  };
  return {
    ...records,
    exchange(exchange, stage, data, rawJson) {
      guarded("exchanges.jsonl", () => records.exchange(exchange, stage, data, rawJson));
      observer.observe({ kind: "exchange_stage", episode, exchange, stage, at: clock(), data });
    },
    ledger(event) {
      guarded("ledger.jsonl", () => records.ledger(event));
      observer.observe({ kind: "ledger", episode, at: clock(), event });
    },
    auxiliary(data) {
      guarded("auxiliary.jsonl", () => records.auxiliary(data));
      observer.observe({ kind: "auxiliary", episode, at: clock(), data });
    },
    describe(description) {
      guarded("episode.json", () => records.describe(description));
    },
    freeze(marker) {
      guarded("frozen.json", () => records.freeze(marker));
    },
    sync() {
      return guarded("fdatasync", () => records.sync());
    },
    get frozen() {
      return records.frozen;
    },
    get failure() {
      return records.failure;
    },
  };
}
