/**
 * The records of an episode restored after a restart. The files the earlier
 * process wrote (exchanges.jsonl, ledger.jsonl, auxiliary.jsonl, episode.json,
 * frozen.json) are never touched again: they are exactly what that process left,
 * a clean frozen set or the valid prefix a crash left (torn tail included, as
 * evidence). Everything the restored, read-only episode writes goes to its own
 * file, `restart-NNN.jsonl` (one per restart, NNN counting from 001), so each
 * file only ever has one writer and can only be torn at its end:
 *   {type:"restarted", …report}   first line: what the restart found
 *   {type:"ledger", event}        ledger events: the `interrupted` event, refused callbacks
 *   {type:"exchange", …}          refused model requests
 *   {type:"auxiliary", …}
 *   {type:"stopped", …marker}     the final marker of a later shutdown (instead of frozen.json)
 * Same shape as `createEpisodeRecords`, so the episode does not know the difference.
 * The `restarted` and `stopped` lines say the restored episode's `state`: episode.json
 * keeps the state the earlier process last wrote (`running` for one it never saw end).
 * A line that cannot be written (full disk) is kept out of the file and noted in
 * `failure`, never thrown: the restored episode stays visible read-only whatever
 * the disk does, and nothing it would record can run anything.
 */
import { existsSync, readdirSync } from "node:fs";
import {
  type EpisodeRecords,
  formatRecordLine,
  type RecordsOptions,
  type SplicedMembers,
} from "./episode-records.ts";
import { exchangeVerbs, type WriteExchangeLine } from "./exchange-verbs.ts";
import { frozenRecordsError, openRecordFiles } from "./record-files.ts";

export const restartFilePattern = /^restart-(\d{3,})\.jsonl$/;

/** The restart files of a records directory, oldest first. */
export function listRestartFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => restartFilePattern.test(name))
    .sort((a, b) => Number(restartFilePattern.exec(a)?.[1]) - Number(restartFilePattern.exec(b)?.[1]));
}

/**
 * The state an episode is restored in: one that was running can never run again
 * (its process is gone), so it is interrupted; any other state is final and stays.
 */
export function stateAfterRestore<State extends string>(previous: State): State | "interrupted" {
  return previous === "running" ? "interrupted" : previous;
}

export type RestartRecordsOptions = Pick<RecordsOptions, "dir" | "clock" | "redact" | "blobs">;

export type RestartRecords = EpisodeRecords & {
  /** File name of this restart's file, e.g. restart-001.jsonl */
  readonly file: string;
  /** Writes the first line (what the restart found). */
  restarted(report: Record<string, unknown>): void;
};

export function openRestartRecords(options: RestartRecordsOptions): RestartRecords {
  const previous = listRestartFiles(options.dir);
  const last = previous.at(-1);
  const sequence = (last ? Number(restartFilePattern.exec(last)?.[1]) : 0) + 1;
  const file = `restart-${String(sequence).padStart(3, "0")}.jsonl`;
  let stopped = false;
  const files = openRecordFiles(options.dir);

  function append(type: string, value: Record<string, unknown>, spliced: SplicedMembers = {}): void {
    if (stopped) throw frozenRecordsError(options.dir, file);
    try {
      files.append(file, [formatRecordLine(options, { type, ...value }, spliced)]);
    } catch (error) {
      // Kept in `failure`; a restored episode stays visible whatever the disk does.
      files.noteFailure(error);
    }
  }

  const exchangeLine: WriteExchangeLine = (exchangeId, line, spliced) =>
    append("exchange", { exchange: exchangeId, ...line }, spliced);

  return {
    dir: options.dir,
    file,
    restarted: (report) => append("restarted", report),
    exchangeLine,
    ...exchangeVerbs(exchangeLine),
    ledger: (event) => append("ledger", { event }),
    auxiliary: (data) => append("auxiliary", data),
    // episode.json stays the description the earlier process wrote; the API shows the restored state.
    describe(): void {},
    describeInBackground: async () => {},
    freeze(marker: Record<string, unknown>): void {
      if (stopped) return;
      append("stopped", marker);
      stopped = true;
      files.closeAll();
    },
    get frozen() {
      return stopped;
    },
    // A restored episode delivers nothing, so nothing waits for its lines to be durable.
    sync: async () => {},
    get failure() {
      return files.failure;
    },
  };
}
