/**
 * The content-addressed blob store of a data directory: every image the sidecar
 * sees (the client's original bytes) and every image it sends (the WebP) is one
 * file, `<data_dir>/blobs/sha256/<64 lowercase hex>`, named by the SHA-256 of its
 * bytes. Record lines refer to blobs by digest (image-references.ts), so exchange
 * lines hold text only and a frame resent on every turn is stored once — across
 * all episodes of the data directory.
 *
 * A blob is written whole (temporary file + rename) before `put` returns, so a
 * record line written after it never refers to a blob that is not on disk, even
 * after kill -9. Blobs are immutable: an existing name is never rewritten.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../lib/sha256.ts";
import { RecordsWriteError } from "./append-file.ts";
import { writeFileAtomically } from "./write-file-atomically.ts";

export const blobDigestPattern = /^[0-9a-f]{64}$/;

export type BlobStore = {
  readonly dir: string;
  /**
   * Stores the bytes (once) and returns their SHA-256 hex digest. With the digest given,
   * the bytes can be a function, called only when the blob is not on disk yet.
   */
  put(bytes: Uint8Array | (() => Uint8Array), digest?: string): string;
  has(digest: string): boolean;
  /** The blob's bytes, checked against its digest; throws naming the digest when missing or damaged. */
  read(digest: string): Uint8Array;
  path(digest: string): string;
};

/** Digests known to be on disk are remembered up to this many (then the set starts over). */
const rememberedDigests = 100_000;

export function blobStoreDir(dataDir: string): string {
  return join(dataDir, "blobs", "sha256");
}

export function createBlobStore(dataDir: string, write = writeFileAtomically): BlobStore {
  const dir = blobStoreDir(dataDir);
  const onDisk = new Set<string>();
  let created = false;

  function path(digest: string): string {
    if (!blobDigestPattern.test(digest)) throw new Error(`not a SHA-256 hex digest: ${digest.slice(0, 80)}`);
    return join(dir, digest);
  }

  return {
    dir,
    path,
    put(source, known) {
      const bytesOf = typeof source === "function" ? source : () => source;
      const digest = known ?? sha256Hex(bytesOf());
      if (onDisk.has(digest)) return digest;
      const target = path(digest);
      if (!existsSync(target)) {
        const bytes = bytesOf();
        try {
          if (!created) {
            mkdirSync(dir, { recursive: true });
            created = true;
          }
          write(target, bytes);
        } catch (error) {
          // A records write like any other (a full disk …): the exchange fails as retryable, naming it.
          throw new RecordsWriteError(target, error);
        }
      }
      if (onDisk.size >= rememberedDigests) onDisk.clear();
      onDisk.add(digest);
      return digest;
    },
    has(digest) {
      return onDisk.has(digest) || existsSync(path(digest));
    },
    read(digest) {
      const file = path(digest);
      if (!existsSync(file)) throw new Error(`blob sha256:${digest} is missing from ${dir}`);
      const bytes = new Uint8Array(readFileSync(file));
      if (sha256Hex(bytes) !== digest)
        throw new Error(`blob sha256:${digest} in ${dir} is damaged (digest mismatch)`);
      return bytes;
    },
  };
}
