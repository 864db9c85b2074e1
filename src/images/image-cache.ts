/**
 * The process-wide cache of converted images: SHA-256 of the source PNG bytes →
 * the lossless WebP bytes. Every client resends its whole history on every turn,
 * so without it turn N re-encodes N images; with it a turn costs one encode per
 * new frame plus one hash per image.
 *
 * One cache for all episodes, bounded by bytes (config `images.cache_bytes`), least
 * recently used first out: memory does not grow with the number of episodes, and
 * the same frame in two episodes is converted once. Binary WebP, not base64 text
 * (a third smaller). The key is a SHA-256: a collision would show the model the
 * wrong picture, which on a robot is a wrong action.
 *
 * An entry remembers the episodes that used it: once none of them can send it
 * again (each has ended, `release`), it goes at once rather than waiting to be
 * pushed out, so the memory of ended episodes is given back. An episode also lets
 * go of single frames it will never send again (`forget`: the frames its context
 * policy, body_budget or sliding_window, has dropped for good), so a long episode
 * holds the frames it sends, not its whole history.
 *
 * A frame an episode sends goes upstream as base64 on every turn it is kept: its
 * base64 text is made once (`base64`) and kept with the entry, counted in its bytes.
 */
import { encodeBase64 } from "../lib/base64.ts";

export interface ImageCache {
  /** The WebP of a source, now also used by `owner` (an episode id) when given. */
  get(sourceDigest: string, owner?: string): Uint8Array | undefined;
  /** The WebP of a source, if cached, leaving its place in the LRU and its owners as they are. */
  peek(sourceDigest: string): Uint8Array | undefined;
  set(sourceDigest: string, webp: Uint8Array, owner?: string): void;
  /** The WebP of a source as base64 text, if cached: encoded on the first call, then kept with the entry. */
  base64(sourceDigest: string): string | undefined;
  /** `owner` sends no more images: entries that only it used are dropped. */
  release(owner: string): void;
  /** `owner` will not send this source again: its entry is dropped once no other owner uses it. */
  forget(sourceDigest: string, owner?: string): void;
  readonly entries: number;
  readonly bytes: number;
}

/** Bytes an entry costs: the WebP, its base64 text once made, and its key (64 hex characters). */
const sizeOf = (key: string, entry: { webp: Uint8Array; text?: string }) =>
  key.length + entry.webp.byteLength + (entry.text?.length ?? 0);

type Entry = { webp: Uint8Array; owners: Set<string>; text?: string };

/** A byte-bounded LRU (a Map iterates oldest first); maxBytes 0 caches nothing. */
export function createImageCache(maxBytes: number): ImageCache {
  const map = new Map<string, Entry>();
  let bytes = 0;
  const remove = (key: string, entry: Entry) => {
    map.delete(key);
    bytes -= sizeOf(key, entry);
  };
  const evictOver = () => {
    for (const [oldKey, oldEntry] of map) {
      if (bytes <= maxBytes) break;
      remove(oldKey, oldEntry);
    }
  };
  return {
    get(key, owner) {
      const entry = map.get(key);
      if (entry === undefined) return undefined;
      map.delete(key);
      map.set(key, entry);
      if (owner !== undefined) entry.owners.add(owner);
      return entry.webp;
    },
    peek(key) {
      return map.get(key)?.webp;
    },
    set(key, webp, owner) {
      const previous = map.get(key);
      if (previous !== undefined) remove(key, previous);
      const size = sizeOf(key, { webp });
      if (size > maxBytes) return;
      const owners = previous?.owners ?? new Set<string>();
      if (owner !== undefined) owners.add(owner);
      map.set(key, { webp, owners });
      bytes += size;
      evictOver();
    },
    base64(key) {
      const entry = map.get(key);
      if (entry === undefined) return undefined;
      if (entry.text !== undefined) return entry.text;
      const text = encodeBase64(entry.webp);
      // Kept only while the entry with its text fits; otherwise made again next time.
      if (sizeOf(key, entry) + text.length > maxBytes) return text;
      entry.text = text;
      bytes += text.length;
      evictOver();
      return text;
    },
    release(owner) {
      for (const [key, entry] of map) {
        if (!entry.owners.delete(owner)) continue;
        if (entry.owners.size === 0) remove(key, entry);
      }
    },
    forget(key, owner) {
      const entry = map.get(key);
      if (entry === undefined) return;
      if (owner !== undefined) entry.owners.delete(owner);
      if (entry.owners.size === 0) remove(key, entry);
    },
    get entries() {
      return map.size;
    },
    get bytes() {
      return bytes;
    },
  };
}
