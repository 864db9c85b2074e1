/**
 * What the dataset export needs from one episode's records, read in one place:
 * the description (episode.json), whether the records were closed cleanly
 * (frozen.json) or restored after a restart (restart-NNN.jsonl), and every
 * exchange with its stages. Nothing here interprets a conversation.
 *
 * Damage is reported, never papered over: a torn last line of exchanges.jsonl is
 * returned as `torn` (the caller decides), any other unparseable line or an
 * unreadable description makes the whole episode unreadable (`RecordsUnreadable`).
 * Blob references (`{"$blob":"sha256:<hex>",…}`) are resolved lazily from
 * <data_dir>/blobs/sha256/<hex>; a missing blob is reported by its name.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { episodeIdPattern } from "../episodes/ids.ts";
import { type StoredEpisode, storedEpisodeSchema } from "../lifecycle/stored-episode.ts";
import { createBlobStore } from "../records/blob-store.ts";
import { readJsonLines } from "../records/jsonl-file.ts";
import { listRestartFiles } from "../records/restart-records.ts";

export type ExchangeStages = {
  id: string;
  /** Each recorded stage's line by stage name (client_request, after_context, upstream_request, …). */
  stages: Record<string, Record<string, unknown>>;
};

export type EpisodeRecordsRead = {
  id: string;
  dir: string;
  stored: StoredEpisode;
  /** frozen.json was written: the process that owned the episode shut down cleanly. */
  frozen: boolean;
  /** restart-NNN.jsonl files: a later process restored the episode read-only. */
  restarts: string[];
  /** Exchanges in the order their first stage was recorded. */
  exchanges: ExchangeStages[];
  /** The torn last line of exchanges.jsonl (a write cut short), when there is one. */
  torn: { file: string; chars: number } | undefined;
};

export class RecordsUnreadable extends Error {}

/** Episode ids under <data_dir>/episodes, sorted (the export's order). */
export function listEpisodeIds(dataDir: string): string[] {
  const root = join(dataDir, "episodes");
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((name) => episodeIdPattern.test(name))
    .sort();
}

export function readEpisode(dataDir: string, id: string): EpisodeRecordsRead {
  const dir = join(dataDir, "episodes", id);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(dir, "episode.json"), "utf8"));
  } catch (error) {
    throw new RecordsUnreadable(`episode.json is missing or not JSON: ${(error as Error).message}`);
  }
  const parsed = storedEpisodeSchema.safeParse(raw);
  if (!parsed.success)
    throw new RecordsUnreadable(
      `episode.json does not describe an episode: ${parsed.error.issues[0]?.message ?? "invalid"}`,
    );
  let contents: ReturnType<typeof readJsonLines<Record<string, unknown>>>;
  try {
    contents = readJsonLines<Record<string, unknown>>(join(dir, "exchanges.jsonl"));
  } catch (error) {
    throw new RecordsUnreadable((error as Error).message);
  }
  const byId = new Map<string, ExchangeStages>();
  for (const line of contents.entries) {
    const exchange = line.exchange;
    const stage = line.stage;
    if (typeof exchange !== "string" || typeof stage !== "string") continue;
    let entry = byId.get(exchange);
    if (!entry) {
      entry = { id: exchange, stages: {} };
      byId.set(exchange, entry);
    }
    entry.stages[stage] = line;
  }
  return {
    id,
    dir,
    stored: parsed.data,
    frozen: existsSync(join(dir, "frozen.json")),
    restarts: listRestartFiles(dir),
    exchanges: [...byId.values()],
    torn:
      contents.tornTail === undefined
        ? undefined
        : { file: "exchanges.jsonl", chars: contents.tornTail.length },
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
