/**
 * Start-up after a stop or a crash: every episode found under
 * `<data_dir>/episodes/*` is restored read-only, so its status stays visible and
 * a replayed callback from the old client meets a clear ledger refusal.
 *
 *  - Description from episode.json; credentials only as their SHA-256 digests
 *    (a restored episode authenticates against them; no token is ever stored).
 *  - Ledger rebuilt from ledger.jsonl (plus the ledger events of earlier
 *    restarts) with `restoreEpisodeLedger`: admission closed for good, an
 *    `interrupted` event lists the calls claimed without a receipt — uncertain:
 *    they may or may not have run. No call from before the restart is ever
 *    claimed again.
 *  - A `running` episode becomes `interrupted`; finished and failed ones stay so.
 *    Every model request for a restored episode gets a final 400 `episode_closed`.
 *  - Records are read as a valid prefix: a torn last line (kill -9 mid-write) is
 *    reported in the status, never fatal. The files the earlier process wrote are
 *    never modified; what the restored episode writes goes to `restart-NNN.jsonl`
 *    (see src/records/restart-records.ts), whose first line is the restart report.
 *    A clean earlier shutdown left `frozen.json`; it stays as it is and is quoted
 *    in the report.
 * A directory that cannot be restored (no readable episode.json) is reported and
 * skipped; it never stops the sidecar from starting.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config/schema.ts";
import { createEpisode, type Episode, type FailureReason } from "../episodes/episode.ts";
import type { Executor } from "../executor/executor.ts";
import { restoreEpisodeLedger } from "../ledger/episode-ledger.ts";
import { type LedgerEventBody, ledgerEventSchema } from "../ledger/events.ts";
import {
  applyLedgerEvent,
  createLedgerState,
  type LedgerState,
  unfinishedCalls,
} from "../ledger/ledger-state.ts";
import { credentialDigestRef } from "../lib/credentials.ts";
import { errorMessage } from "../lib/error-message.ts";
import { SidecarError } from "../lib/errors.ts";
import { episodeIdPattern } from "../lib/ids.ts";
import type { Logger } from "../lib/logger.ts";
import type { Manifest } from "../manifest/manifest-schema.ts";
import type { BlobStore } from "../records/blob-store.ts";
import { readJsonLines } from "../records/jsonl-file.ts";
import { listRestartFiles, openRestartRecords, stateAfterRestore } from "../records/restart-records.ts";
import {
  restoredCost,
  type StoredEpisode,
  storedContextPolicy,
  storedEpisodeSchema,
} from "./stored-episode.ts";

export type RestoreDeps = {
  /** The data directory; episodes live in `<dataDir>/episodes/<id>`. */
  dataDir: string;
  config: Pick<Config, "delivery" | "shutdown">;
  /** Used when episode.json predates the stored manifest. */
  defaultManifest: Manifest;
  clock: () => number;
  redact: (line: string) => string;
  /** The data directory's blob store (images of record lines). */
  blobs: BlobStore;
  logger: Logger;
};

export type RestoreProblem = { dir: string; message: string };

/** What the restart found, also the first line of restart-NNN.jsonl and `restart` in the status. */
export type RestartReport = {
  restarted_at: string;
  restart_file: string;
  previous_state: StoredEpisode["state"];
  /** The state the episode is restored in (episode.json keeps `previous_state`). */
  state: StoredEpisode["state"];
  /** Whether the earlier process froze the records at a clean shutdown, and its marker. */
  records_frozen: boolean;
  frozen_marker: unknown;
  /** Claimed calls without a receipt or failure: they may or may not have run. */
  uncertain: string[];
  /**
   * Files with a torn line (kill -9 or a power cut mid-write): every whole line before it
   * was read; `chars` and `lines` are what was left unread from the torn line on (normally
   * 1 line: the last).
   */
  torn_tails: Record<string, { chars: number; lines: number }>;
  /** Files that could not be read at all, and why. */
  unreadable: Record<string, string>;
  /** Ledger events replayed (the valid prefix). */
  ledger_events: number;
  /** Set when a ledger event could not be replayed: the prefix before it was used. */
  ledger_problem?: string;
  /** "sha256" when the credential digests were found; "missing" means no old credential is accepted. */
  credentials: "sha256" | "missing";
};

/** Restores every episode directory under `<dataDir>/episodes`. */
export function restoreEpisodes(deps: RestoreDeps): { episodes: Episode[]; problems: RestoreProblem[] } {
  const root = join(deps.dataDir, "episodes");
  const episodes: Episode[] = [];
  const problems: RestoreProblem[] = [];
  if (!existsSync(root)) return { episodes, problems };
  const names = readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  for (const name of names) {
    const dir = join(root, name);
    try {
      if (!episodeIdPattern.test(name)) throw new Error("not an episode directory name");
      episodes.push(restoreEpisode(dir, deps));
    } catch (error) {
      const message = errorMessage(error);
      problems.push({ dir, message });
      deps.logger.warn("episode not restored", { dir, reason: message });
    }
  }
  return { episodes, problems };
}

const recordFiles = ["exchanges.jsonl", "ledger.jsonl", "auxiliary.jsonl"] as const;

/** Restores one episode directory read-only; throws when it has no readable description. */
export function restoreEpisode(dir: string, deps: RestoreDeps): Episode {
  const stored = readStoredEpisode(dir);
  const torn: RestartReport["torn_tails"] = {};
  const unreadable: RestartReport["unreadable"] = {};
  const read = (file: string): unknown[] => {
    try {
      const contents = readJsonLines(join(dir, file));
      if (contents.tornTail !== undefined)
        torn[file] = { chars: contents.tornTail.length, lines: contents.tornLines };
      return contents.entries;
    } catch (error) {
      unreadable[file] = errorMessage(error);
      return [];
    }
  };
  const entries = Object.fromEntries(recordFiles.map((file) => [file, read(file)])) as Record<
    (typeof recordFiles)[number],
    unknown[]
  >;
  const earlierRestarts = listRestartFiles(dir).map((file) => read(file) as Record<string, unknown>[]);

  // The journal: ledger.jsonl, then the ledger events of earlier restarts.
  const journal: unknown[] = [
    ...entries["ledger.jsonl"],
    ...earlierRestarts.flatMap((lines) => lines.filter((l) => l.type === "ledger").map((l) => l.event)),
  ];
  const { events, problem } = replayablePrefix(journal);
  const uncertain = unfinishedCalls(fold(events));

  const frozenMarker = readFrozenMarker(dir);
  const previousState = stored.state;
  const state = stateAfterRestore(previousState);
  const restartedAt = new Date(deps.clock()).toISOString();
  const records = openRestartRecords({ dir, clock: deps.clock, redact: deps.redact, blobs: deps.blobs });
  const report: RestartReport = {
    restarted_at: restartedAt,
    restart_file: records.file,
    previous_state: previousState,
    state,
    records_frozen: frozenMarker !== undefined,
    frozen_marker: frozenMarker ?? null,
    uncertain,
    torn_tails: torn,
    unreadable,
    ledger_events: events.length,
    ...(problem ? { ledger_problem: problem } : {}),
    credentials: stored.restore ? "sha256" : "missing",
  };
  records.restarted(report);

  const failure: { reason: FailureReason; message: string } | undefined =
    previousState === "running"
      ? {
          reason: "interrupted",
          message: `the sidecar stopped while the episode was running; restored at ${restartedAt}`,
        }
      : (stored.failure ?? undefined);
  const closedReason = `episode ${stored.id} was restored read-only after a sidecar restart (state ${state}${failure ? `: ${failure.reason}` : ""}); no further model exchanges are run`;
  const exchangeSeq = maxExchangeNumber([
    ...entries["exchanges.jsonl"],
    ...earlierRestarts.flat().filter((l) => l.type === "exchange"),
  ]);

  const { cost, perCurrency } = restoredCost(stored, entries["exchanges.jsonl"]);
  const episode = createEpisode({
    id: stored.id,
    createdAt: stored.created_at,
    model: stored.model,
    manifest: stored.restore?.manifest ?? deps.defaultManifest,
    maxTurns: stored.max_turns,
    context: storedContextPolicy(stored),
    client: stored.client ?? undefined,
    ingressKey: credentialDigestRef(stored.restore?.ingress_key_sha256),
    mcpToken: credentialDigestRef(stored.restore?.mcp_token_sha256),
    records,
    delivery: deps.config.delivery,
    executor: closedExecutor(stored.id),
    drainDeadlineMs: deps.config.shutdown.drain_deadline_ms,
    clock: deps.clock,
    createLedger: (options) => restoreEpisodeLedger(events, options),
    restored: {
      state,
      failure,
      result: stored.result ?? undefined,
      counters: stored.counters,
      ...(cost ? { cost } : {}),
      exchangeSeq,
      closedReason,
      report,
    },
  });
  const log = deps.logger.child({ episode: stored.id });
  if (Object.keys(torn).length > 0)
    log.warn("torn record tail found (the process was killed mid-write); the valid prefix was read", {
      torn_tails: torn,
    });
  if (Object.keys(unreadable).length > 0) log.error("record files could not be read", { unreadable });
  if (perCurrency)
    log.warn(
      "the records hold costs in more than one currency: not added together; the status keeps episode.json's",
      {
        costs: perCurrency.map((sum) => `${sum.total} ${sum.currency}`),
      },
    );
  if (uncertain.length > 0)
    log.warn(
      "uncertain tool calls: claimed before the restart without a receipt; they may or may not have run",
      { uncertain },
    );
  log.info("episode restored read-only", {
    previous_state: previousState,
    state,
    records_frozen: report.records_frozen,
  });
  return episode;
}

function readStoredEpisode(dir: string): StoredEpisode {
  const path = join(dir, "episode.json");
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Error(`episode.json is missing or not JSON: ${errorMessage(error)}`);
  }
  const parsed = storedEpisodeSchema.safeParse(raw);
  if (!parsed.success)
    throw new Error(
      `episode.json does not describe an episode: ${parsed.error.issues[0]?.message ?? "invalid"}`,
    );
  if (parsed.data.id !== dir.split(/[\\/]/).at(-1))
    throw new Error(`episode.json names episode ${parsed.data.id}, not its directory`);
  return parsed.data;
}

function readFrozenMarker(dir: string): unknown {
  const path = join(dir, "frozen.json");
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    return { unreadable: errorMessage(error) };
  }
}

/** The longest prefix of the journal that parses and applies; the reason it stops early. */
function replayablePrefix(journal: unknown[]): { events: LedgerEventBody[]; problem?: string } {
  const events: LedgerEventBody[] = [];
  let state: LedgerState = createLedgerState();
  for (const [index, raw] of journal.entries()) {
    const parsed = ledgerEventSchema.safeParse(raw);
    if (!parsed.success)
      return {
        events,
        problem: `ledger event ${index} is not a ledger event: ${parsed.error.issues[0]?.message ?? "invalid"}`,
      };
    try {
      state = applyLedgerEvent(state, parsed.data);
    } catch (error) {
      return {
        events,
        problem: `ledger event ${index} (${parsed.data.type}) does not apply: ${errorMessage(error)}`,
      };
    }
    events.push(parsed.data);
  }
  return { events };
}

function fold(events: LedgerEventBody[]): LedgerState {
  return events.reduce(applyLedgerEvent, createLedgerState());
}

function maxExchangeNumber(lines: unknown[]): number {
  let max = 0;
  for (const line of lines) {
    const id = (line as { exchange?: unknown }).exchange;
    const n = typeof id === "string" ? Number(/^ex_(\d+)$/.exec(id)?.[1] ?? 0) : 0;
    if (n > max) max = n;
  }
  return max;
}

/** A restored episode runs nothing; the ledger refuses every callback before this could be reached. */
function closedExecutor(episodeId: string): Executor {
  const refuse = async (): Promise<never> => {
    throw new SidecarError(
      "episode_closed",
      `episode ${episodeId} was restored read-only after a restart; nothing is executed`,
    );
  };
  return { submit: refuse, receipt: refuse };
}
