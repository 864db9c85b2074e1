/**
 * What the dataset export needs from one episode's records, read through the
 * records' one reader (records/read-records.ts):
 * the description (episode.json), whether the records were closed cleanly
 * (frozen.json) or restored after a restart (restart-NNN.jsonl), every
 * exchange with its stages, and the calls the ledger held and never ran
 * (rejected, rate limited: negative examples, docs/approvals.md). Nothing here interprets a conversation.
 *
 * Damage is reported, never papered over: a torn last line of exchanges.jsonl is
 * returned as `torn` (the caller decides), any other unparseable line or an
 * unreadable description makes the whole episode unreadable (`RecordsUnreadable`).
 * Blob references (`{"$blob":"sha256:<hex>",…}`) are resolved lazily from
 * <data_dir>/blobs/sha256/<hex>; a missing blob is reported by its name.
 */
import { existsSync } from "node:fs";
import { type StoredEpisode, storedEpisodeSchema } from "../lifecycle/stored-episode.ts";
import { createBlobStore } from "../records/blob-store.ts";
import { type ExchangeLineRead, type ExchangeStage, exchangeStageSchema } from "../records/exchange-lines.ts";
import { type EpisodeRecordsView, openRecords, RecordFileUnreadable } from "../records/read-records.ts";

/** Each stage's last line, read by its schema (records/exchange-lines.ts). */
export type ExchangeStageLines = { [S in ExchangeStage]?: ExchangeLineRead<S> };

export type ExchangeStages = {
  id: string;
  /** Each recorded stage's line by stage name (client_request, after_context, upstream_request, …). */
  stages: ExchangeStageLines;
};

export type EpisodeRecordsRead = {
  id: string;
  dir: string;
  stored: StoredEpisode;
  /** The last known state: episode.json's, or what a later process's restore made it (read-records.ts). */
  state: string;
  /** frozen.json was written: the process that owned the episode shut down cleanly. */
  frozen: boolean;
  /** restart-NNN.jsonl files: a later process restored the episode read-only. */
  restarts: string[];
  /** Exchanges in the order their first stage was recorded. */
  exchanges: ExchangeStages[];
  /** The torn last line of exchanges.jsonl (a write cut short), when there is one. */
  torn: { file: string; chars: number } | undefined;
  /** Calls a person or a policy kept from running, by call id (the ledger journal and the restarts' ledger events). */
  heldCalls: ReadonlyMap<string, HeldCall>;
};

/** A delivered call that never ran: rejected (by an operator, no decision in time, a close, a restart) or rate limited. */
export type HeldCall = {
  status: "rejected" | "rate_limited";
  /** Who rejected it (ui, api, timeout, closed, restart); the limit for a rate-limited call. */
  by: string;
  reason: string;
};

function heldCalls(view: EpisodeRecordsView): Map<string, HeldCall> {
  const events = [
    ...view.ledger.map((line) => line.value),
    ...view.restarts.flatMap((restart) =>
      restart.lines.flatMap((line) =>
        line.value.type === "ledger" && typeof line.value.event === "object" && line.value.event !== null
          ? [line.value.event as Record<string, unknown>]
          : [],
      ),
    ),
  ];
  const held = new Map<string, HeldCall>();
  for (const event of events) {
    if ((event.type !== "rejected" && event.type !== "rate_limited") || typeof event.callId !== "string")
      continue;
    held.set(event.callId, {
      status: event.type,
      by: String(event.type === "rejected" ? event.by : event.limit),
      reason: String(event.reason ?? ""),
    });
  }
  return held;
}

export class RecordsUnreadable extends Error {}

/** Episode ids under <data_dir>/episodes, sorted (the export's order). */
export function listEpisodeIds(dataDir: string): string[] {
  return openRecords(dataDir).episodeIds();
}

export function readEpisode(dataDir: string, id: string): EpisodeRecordsRead {
  let view: EpisodeRecordsView;
  try {
    view = openRecords(dataDir).readEpisode(id);
  } catch (error) {
    if (!(error instanceof RecordFileUnreadable)) throw error;
    throw new RecordsUnreadable(
      error.file === "episode.json" ? `episode.json is missing or not JSON: ${error.message}` : error.message,
    );
  }
  if (view.description === undefined)
    throw new RecordsUnreadable("episode.json is missing or not JSON: no such file");
  const parsed = storedEpisodeSchema.safeParse(view.description);
  if (!parsed.success)
    throw new RecordsUnreadable(
      `episode.json does not describe an episode: ${parsed.error.issues[0]?.message ?? "invalid"}`,
    );
  const torn = view.tornTails["exchanges.jsonl"];
  return {
    id,
    dir: view.dir,
    stored: parsed.data,
    state: view.state ?? parsed.data.state,
    frozen: view.frozen !== undefined,
    restarts: view.restarts.map((restart) => restart.file),
    exchanges: view.exchanges.map((exchange) => ({
      id: exchange.id,
      stages: Object.fromEntries(
        exchangeStageSchema.options.flatMap((stage) => {
          const line = exchange.line(stage);
          return line === undefined ? [] : [[stage, line]];
        }),
      ),
    })),
    torn: torn === undefined ? undefined : { file: "exchanges.jsonl", chars: torn.length },
    heldCalls: heldCalls(view),
  };
}

/** A `$blob` reference as record lines carry it in place of inline image data. */
export type BlobRef = { $blob: string; media_type?: string; bytes?: number };

export function isBlobRef(value: unknown): value is BlobRef {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { $blob?: unknown }).$blob === "string" &&
    /^sha256:[0-9a-f]{64}$/.test((value as { $blob: string }).$blob)
  );
}

export class MissingBlob extends Error {
  constructor(readonly blob: string) {
    super(`blob ${blob} is missing from the blob store`);
  }
}

/** The bytes of a blob, checked against its name by the records' blob store (a blob whose bytes do not hash to its name is as good as missing). */
export function readBlob(dataDir: string, ref: BlobRef): Uint8Array {
  const digest = ref.$blob.slice("sha256:".length);
  const store = createBlobStore(dataDir);
  if (!existsSync(store.path(digest))) throw new MissingBlob(ref.$blob);
  try {
    return store.read(digest);
  } catch {
    throw new MissingBlob(`${ref.$blob} (its bytes do not hash to its name)`);
  }
}
