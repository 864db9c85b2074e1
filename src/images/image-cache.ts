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
 */
export interface ImageCache {
  get(sourceDigest: string): Uint8Array | undefined;
  set(sourceDigest: string, webp: Uint8Array): void;
  readonly entries: number;
  readonly bytes: number;
}

/** Bytes an entry costs: the WebP plus its key (64 hex characters). */
const sizeOf = (key: string, webp: Uint8Array) => key.length + webp.byteLength;

/** A byte-bounded LRU (a Map iterates oldest first); maxBytes 0 caches nothing. */
export function createImageCache(maxBytes: number): ImageCache {
  const map = new Map<string, Uint8Array>();
  let bytes = 0;
  return {
    get(key) {
      const value = map.get(key);
      if (value === undefined) return undefined;
      map.delete(key);
      map.set(key, value);
      return value;
    },
    set(key, value) {
      const previous = map.get(key);
      if (previous !== undefined) {
        map.delete(key);
        bytes -= sizeOf(key, previous);
      }
      const size = sizeOf(key, value);
      if (size > maxBytes) return;
      map.set(key, value);
      bytes += size;
      for (const [oldKey, oldValue] of map) {
        if (bytes <= maxBytes) break;
        map.delete(oldKey);
        bytes -= sizeOf(oldKey, oldValue);
      }
    },
    get entries() {
      return map.size;
    },
    get bytes() {
      return bytes;
    },
  };
}
