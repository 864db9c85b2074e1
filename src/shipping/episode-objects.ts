/**
 * What shipping one episode means in objects: every file of its records
 * directory (<prefix>episodes/<id>/<file>) and every image blob its record lines
 * refer to (<prefix>blobs/sha256/<hex>, shared by all episodes, so a frame two
 * episodes saw is stored once), found the way the records' own image references
 * are written (records/image-references.ts), also inside text members. Each records file is read once, up to the size it
 * had when planned: the append-only files may grow meanwhile, and what is
 * uploaded is exactly the prefix whose SHA-256 is in the plan.
 */
import { existsSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { blobStoreDir } from "../records/blob-store.ts";
import { referencedDigests } from "../records/image-references.ts";

export type PlannedObject = {
  key: string;
  path: string;
  /** Bytes of the file to upload (its size when planned). */
  size: number;
  sha256: string;
  kind: "record" | "blob";
};

export type EpisodePlan = {
  objects: PlannedObject[];
  /** Blobs referred to by a record line but absent from the data directory. */
  missingBlobs: string[];
};

/** Enough trailing text kept between chunks for a reference split across two reads. */
const carryChars = 128;

export function episodeKey(prefix: string, episode: string, file: string): string {
  return `${prefix}episodes/${episode}/${file}`;
}

export function blobKey(prefix: string, hex: string): string {
  return `${prefix}blobs/sha256/${hex}`;
}

/** The records files of an episode directory (temporary files of a rename in progress left out). */
export async function listRecordFiles(
  dir: string,
): Promise<{ name: string; size: number; mtimeMs: number }[]> {
  const names = (await readdir(dir)).filter((n) => !n.endsWith(".tmp")).sort();
  const files: { name: string; size: number; mtimeMs: number }[] = [];
  for (const name of names) {
    const info = await stat(join(dir, name)).catch(() => undefined);
    if (info?.isFile()) files.push({ name, size: info.size, mtimeMs: info.mtimeMs });
  }
  return files;
}

/** Changes whenever a file is added, grows or is rewritten: an episode is shipped again when it changes. */
export function fingerprintOf(files: { name: string; size: number; mtimeMs: number }[]): string {
  return files.map((f) => `${f.name}:${f.size}:${Math.trunc(f.mtimeMs)}`).join("|");
}

/** SHA-256 of the first `size` bytes of a file, and the blob digests referred to in them. */
export async function digestFile(
  path: string,
  size: number,
): Promise<{ sha256: string; blobs: Set<string> }> {
  const hasher = new Bun.CryptoHasher("sha256");
  const decoder = new TextDecoder();
  const blobs = new Set<string>();
  let carry = "";
  for await (const chunk of Bun.file(path).slice(0, size).stream()) {
    hasher.update(chunk);
    const text = carry + decoder.decode(chunk, { stream: true });
    for (const digest of referencedDigests(text)) blobs.add(digest);
    carry = text.slice(-carryChars);
  }
  return { sha256: hasher.digest("hex"), blobs };
}

export async function planEpisode(options: {
  dataDir: string;
  episode: string;
  dir: string;
  prefix: string;
  files: { name: string; size: number }[];
}): Promise<EpisodePlan> {
  const objects: PlannedObject[] = [];
  const referenced = new Set<string>();
  for (const file of options.files) {
    const path = join(options.dir, file.name);
    const { sha256, blobs } = await digestFile(path, file.size);
    for (const hex of blobs) referenced.add(hex);
    objects.push({
      key: episodeKey(options.prefix, options.episode, file.name),
      path,
      size: file.size,
      sha256,
      kind: "record",
    });
  }
  const missingBlobs: string[] = [];
  for (const hex of [...referenced].sort()) {
    const path = join(blobStoreDir(options.dataDir), hex);
    if (!existsSync(path)) {
      missingBlobs.push(hex);
      continue;
    }
    const size = (await stat(path)).size;
    objects.push({ key: blobKey(options.prefix, hex), path, size, sha256: hex, kind: "blob" });
  }
  return { objects, missingBlobs };
}
