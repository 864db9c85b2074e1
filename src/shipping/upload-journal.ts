/**
 * The upload journal: what this data directory has confirmed in the bucket, so
 * a restart resumes where it stopped and nothing confirmed is sent twice.
 * <data_dir>/shipping/journal.jsonl, append-only, one line per fact, written only
 * after the bucket confirmed it:
 *   {event:"object", target, key, sha256, size}       this object is in the bucket
 *   {event:"shipped", target, episode, fingerprint, …} every object of the episode is,
 *                                                      and its shipped.json was written last
 * `target` (endpoint + bucket) keeps facts about one bucket from counting for another.
 * A torn last line (kill -9 mid-append) is cut off at load: that fact is simply
 * established again.
 */
import { mkdirSync, readFileSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { appendJsonLine, readJsonLines } from "../records/jsonl-file.ts";

const objectFactSchema = z.object({
  event: z.literal("object"),
  target: z.string(),
  key: z.string(),
  sha256: z.string(),
  size: z.number(),
});
const shippedFactSchema = z.object({
  at: z.string(),
  event: z.literal("shipped"),
  target: z.string(),
  episode: z.string(),
  fingerprint: z.string(),
  objects: z.number(),
  bytes: z.number(),
});
const journalLineSchema = z.discriminatedUnion("event", [
  z.looseObject(objectFactSchema.shape),
  z.looseObject(shippedFactSchema.shape),
]);

export type ShippedFact = z.infer<typeof shippedFactSchema>;

/** What has reached the bucket: each object confirmed by its key and SHA-256, each episode shipped. */
export interface UploadJournal {
  readonly path: string;
  /** Whether the bucket holds this key with these bytes (confirmed earlier). */
  has(key: string, sha256: string): boolean;
  confirmObject(key: string, sha256: string, size: number): void;
  confirmShipped(fact: Omit<ShippedFact, "at" | "event" | "target">): ShippedFact;
  shipped(episode: string): ShippedFact | undefined;
}

export function openUploadJournal(options: {
  dataDir: string;
  target: string;
  clock: () => number;
}): UploadJournal {
  const dir = join(options.dataDir, "shipping");
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "journal.jsonl");
  const { entries, tornTail } = readJsonLines(path);
  if (tornTail !== undefined) {
    const length = Buffer.byteLength(readFileSync(path, "utf8")) - Buffer.byteLength(tornTail);
    truncateSync(path, length);
  }
  /** key → sha256 of the confirmed object. */
  const objects = new Map<string, string>();
  const shipped = new Map<string, ShippedFact>();
  for (const entry of entries) {
    const line = journalLineSchema.safeParse(entry);
    if (!line.success || line.data.target !== options.target) continue;
    if (line.data.event === "object") objects.set(line.data.key, line.data.sha256);
    else shipped.set(line.data.episode, line.data as ShippedFact);
  }
  const now = () => new Date(options.clock()).toISOString();
  return {
    path,
    has: (key, sha256) => objects.get(key) === sha256,
    confirmObject(key, sha256, size) {
      appendJsonLine(path, { at: now(), event: "object", target: options.target, key, sha256, size });
      objects.set(key, sha256);
    },
    confirmShipped(fact) {
      const line: ShippedFact = { at: now(), event: "shipped", target: options.target, ...fact };
      appendJsonLine(path, line);
      shipped.set(fact.episode, line);
      return line;
    },
    shipped: (episode) => shipped.get(episode),
  };
}
