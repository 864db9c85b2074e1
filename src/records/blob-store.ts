/**
 * The content-addressed blob store of a data directory: every image the sidecar
 * sees (the client's original bytes) and every image it sends (the WebP) is one
 * file, `<data_dir>/blobs/sha256/<64 lowercase hex>`, named by the SHA-256 of its
 * bytes. Record lines refer to blobs by digest (image-references.ts), so exchange
 * lines hold text only and a frame resent on every turn is stored once — across
 * all episodes of the data directory.
 *
 * `put` writes a blob whole (temporary file + rename) before it returns, so a
 * record line written after it never refers to a blob that is not on disk, even
 * after kill -9. Making it survive a power cut (fsync of the file, then of the
 * directory for its name) is slow — ~1–10 ms per MB on this kind of disk — so it
 * runs in the runtime's thread pool instead of on the event loop: it starts when
 * `put` returns and overlaps whatever the exchange does next (converting, the
 * upstream wait). `durable()` resolves once every blob put so far is on stable
 * storage; the records wait for it before they fdatasync a line that refers to a
 * blob, so a line is never durable before its blobs. A blob whose name survived a
 * power cut without its bytes (renamed, not yet fsync'ed) has the wrong size and
 * is written again when it is next put; any other damage is refused on read by
 * the digest check. Blobs are immutable: a name holding the right bytes is never
 * rewritten.
 */
import {
  closeSync,
  fsync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../lib/sha256.ts";
import { RecordsWriteError } from "./append-file.ts";
import { createGroupCommit, type Datasync } from "./group-commit.ts";

export const blobDigestPattern = /^[0-9a-f]{64}$/;

export type BlobStore = {
  readonly dir: string;
  /**
   * Stores the bytes (once) under their name and returns their SHA-256 hex digest;
   * the blob's fsync is then under way (`durable`). With the digest given, the bytes
   * can be a function, called only when the blob is not on disk yet; `length` (the
   * bytes' count) lets a blob already on disk be checked without them.
   */
  put(bytes: Uint8Array | (() => Uint8Array), digest?: string, length?: number): string;
  /** Resolves once every blob put so far is on stable storage; rejects with RecordsWriteError if one cannot be. */
  durable(): Promise<void>;
  /** The same, synchronously (a final freeze, which cannot wait for the thread pool). */
  durableNow(): void;
  has(digest: string): boolean;
  /**
   * Whether the blob's file is on disk now (a stat, not what is remembered): a blob found
   * missing is forgotten, so its next `put` writes it again. What a known frame's stand-in
   * needs before its text is left to be rebuilt from the blob (src/lib/known-frame.ts).
   */
  onDiskNow(digest: string): boolean;
  /** The blob's bytes, checked against its digest; throws naming the digest when missing or damaged. */
  read(digest: string): Uint8Array;
  /**
   * Renames a blob that does not read back as its digest to `<digest>.damaged` (kept for a
   * look, one per digest) and forgets it, so its next `put` writes it again. Its size is
   * right, so `put` alone would keep trusting it. A blob already gone is no error.
   */
  setAside(digest: string): void;
  path(digest: string): string;
};

export type BlobStoreOptions = {
  /** fsync every blob and the directory's names (config records.fsync); off = blobs survive kill -9, not a power cut. */
  fsync?: boolean;
  /** Told the bytes of each blob written (the data directory's budget). */
  written?: (bytes: number) => void;
  /** Replaces the thread-pool fsync in tests (ordering, failures). */
  fsyncInPool?: Datasync;
};

/** Digests known to be on disk are remembered up to this many (then the set starts over). */
const rememberedDigests = 100_000;

export function blobStoreDir(dataDir: string): string {
  return join(dataDir, "blobs", "sha256");
}

/** Writes the bytes under the temporary name `tmp` and renames it to `path`; returns the still open descriptor. */
function writeThenRename(path: string, tmp: string, bytes: Uint8Array): number {
  const fd = openSync(tmp, "w");
  try {
    // writeSync may write less than asked (a full disk mid-write): loop until all is written.
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    renameSync(tmp, path);
  } catch (error) {
    closeSync(fd);
    unlinkSync(tmp);
    throw error;
  }
  return fd;
}

const resolved = Promise.resolve();

export function createBlobStore(dataDir: string, options: BlobStoreOptions = {}): BlobStore {
  const dir = blobStoreDir(dataDir);
  /** Names each write's temporary file apart from any other under way. */
  let tmpFiles = 0;
  const syncing = options.fsync ?? true;
  const fsyncInPool = options.fsyncInPool ?? fsync;
  // The names: one fsync of the directory covers every rename made before it began.
  const names = createGroupCommit({ fdatasync: fsyncInPool });
  const onDisk = new Set<string>();
  /** Blobs whose fsync failed: their file may not hold what the page cache showed, so the next put writes them again. */
  const unsynced = new Set<string>();
  /** Blobs written whose fsync has not completed: descriptor (open until then) and outcome. */
  const pending = new Map<string, { fd: number; done: Promise<void> }>();
  let dirFd: number | undefined;

  function path(digest: string): string {
    if (!blobDigestPattern.test(digest)) throw new Error(`not a SHA-256 hex digest: ${digest.slice(0, 80)}`);
    return join(dir, digest);
  }

  function directory(): number {
    if (dirFd === undefined) {
      mkdirSync(dir, { recursive: true });
      dirFd = openSync(dir, "r");
    }
    return dirFd;
  }

  function syncInBackground(digest: string, target: string, fd: number): void {
    const done = new Promise<void>((resolve, reject) => {
      fsyncInPool(fd, (error) => {
        closeSync(fd);
        if (error) reject(error);
        else names.sync(directory()).then(resolve, reject);
      });
    }).catch((error: unknown) => {
      // Written again on its next put, so a later exchange gets a durable copy.
      onDisk.delete(digest);
      unsynced.add(digest);
      throw new RecordsWriteError(target, error);
    });
    const entry = { fd, done };
    pending.set(digest, entry);
    // Settled here, so a failure nobody waits for is not an unhandled rejection.
    done.then(
      () => pending.get(digest) === entry && pending.delete(digest),
      () => pending.get(digest) === entry && pending.delete(digest),
    );
  }

  function write(digest: string, target: string, bytes: Uint8Array): void {
    try {
      directory();
      tmpFiles += 1;
      const fd = writeThenRename(target, `${target}.tmp-${process.pid}-${tmpFiles}`, bytes);
      if (syncing) syncInBackground(digest, target, fd);
      else closeSync(fd);
    } catch (error) {
      // A records write like any other (a full disk …): the exchange fails as retryable, naming it.
      throw new RecordsWriteError(target, error);
    }
    options.written?.(bytes.length);
  }

  return {
    dir,
    path,
    put(source, known, length) {
      const bytesOf = typeof source === "function" ? source : () => source;
      const digest = known ?? sha256Hex(bytesOf());
      if (onDisk.has(digest)) return digest;
      const target = path(digest);
      const size = statSync(target, { throwIfNoEntry: false })?.size;
      const expected = length ?? (typeof source === "function" ? size : source.length);
      // Not there, a name whose bytes a power cut lost (they were not fsync'ed yet), or a failed fsync.
      if (size === undefined || size !== expected || unsynced.delete(digest))
        write(digest, target, bytesOf());
      if (onDisk.size >= rememberedDigests) onDisk.clear();
      onDisk.add(digest);
      return digest;
    },
    durable() {
      if (pending.size === 0) return resolved;
      return Promise.all(Array.from(pending.values(), (entry) => entry.done)).then(() => {});
    },
    durableNow() {
      if (pending.size === 0) return;
      try {
        for (const entry of pending.values()) fsyncSync(entry.fd);
        fsyncSync(directory());
      } catch (error) {
        throw new RecordsWriteError(dir, error);
      }
    },
    has(digest) {
      return onDisk.has(digest) || statSync(path(digest), { throwIfNoEntry: false }) !== undefined;
    },
    onDiskNow(digest) {
      if (statSync(path(digest), { throwIfNoEntry: false }) !== undefined) return true;
      onDisk.delete(digest);
      return false;
    },
    setAside(digest) {
      const file = path(digest);
      onDisk.delete(digest);
      try {
        renameSync(file, `${file}.damaged`);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw new RecordsWriteError(file, error);
      }
    },
    read(digest) {
      const file = path(digest);
      if (statSync(file, { throwIfNoEntry: false }) === undefined)
        throw new Error(`blob sha256:${digest} is missing from ${dir}`);
      const bytes = new Uint8Array(readFileSync(file));
      if (sha256Hex(bytes) !== digest)
        throw new Error(`blob sha256:${digest} in ${dir} is damaged (digest mismatch)`);
      return bytes;
    },
  };
}
