/**
 * Per-episode LRU of converted images: PNG base64 → WebP base64. Every CLI re-sends
 * the whole history each turn, so without it turn N re-encodes N images; with it a
 * turn costs about one encode plus one hash per image. Bounded by entry count and by
 * the bytes of WebP text held; the least recently used entries go first.
 *
 * Key: Bun.hash (64-bit wyhash, ~0.1 ms per MB) of the base64 text plus its length.
 * sha256 costs ~0.8 ms per MB, which across a 30-image history is a whole encode's
 * worth per turn; an accidental 64-bit collision between two same-length images in
 * one episode is not a practical risk.
 */
import type { ImageCacheSettings } from "./settings.ts";

export interface WebpCache {
  get(key: string): string | undefined;
  set(key: string, webpBase64: string): void;
  readonly entries: number;
  readonly bytes: number;
}

export function webpCacheKey(pngBase64: string): string {
  return `${Bun.hash(pngBase64).toString(16)}:${pngBase64.length}`;
}

export function createWebpCache(settings: ImageCacheSettings): WebpCache {
  const map = new Map<string, string>();
  let bytes = 0;
  const sizeOf = (key: string, value: string) => key.length + value.length;

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
      if (size > settings.max_bytes) return;
      map.set(key, value);
      bytes += size;
      for (const [oldKey, oldValue] of map) {
        if (map.size <= settings.max_entries && bytes <= settings.max_bytes) break;
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
