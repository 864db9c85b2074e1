/**
 * The scripted upstream's context cache: Model Studio's cache accounting played from
 * its documented rules (docs/prompt-cache.md), so tests and benchmarks can assert the
 * cached tokens a request would get.
 *
 * - The prompt is the request's blocks (src/upstream/prompt-blocks.ts); only an
 *   unchanged prefix of it can hit.
 * - A request with any `cache_control` marker is explicit, otherwise implicit: the two
 *   are exclusive per request. More than 4 markers is refused (the provider allows 4;
 *   what it does with more is not documented, so a test that sends more must notice).
 * - Implicit: every prefix of an answered request is remembered (the provider keeps them
 *   for an unstated time; here until `implicitEntries` newer ones push them out); the
 *   longest remembered prefix of at least 256 tokens is served.
 * - Explicit: each marker looks back over its own block and the 20 before it for an
 *   entry ending there that is still alive; the longest such hit is served and its
 *   lifetime renewed (5 minutes from the hit). A marker whose prefix has at least 1024
 *   tokens and no live entry creates one, after the response: `commit` runs when the
 *   answer is complete, so a request never hits its own entry. The creation figure is
 *   the tokens from the served prefix to the furthest marker that created an entry.
 * - Entries are kept per API key and model.
 *
 * Pure state over an injected clock; the server calls `account` per request and the
 * returned `commit` once the answer was sent.
 */
import type { PromptBlock } from "../upstream/prompt-blocks.ts";

export const explicitLifetimeMs = 5 * 60_000;
export const explicitMinTokens = 1024;
export const implicitMinTokens = 256;
export const maxMarkers = 4;
export const markerLookBack = 20;

export type CacheAccount = {
  mode: "implicit" | "explicit";
  cachedTokens: number;
  /** Explicit only: tokens written to new cache entries (billed at 125%). */
  creationTokens: number;
  /** Makes the request's entries (implicit prefixes, explicit markers) available to later requests. */
  commit: () => void;
};

export interface ContextCache {
  /** Throws when the request has more than `maxMarkers` markers. */
  account(key: string, blocks: readonly PromptBlock[]): CacheAccount;
}

type Store = {
  /** Prefix digest → tokens of that prefix; insertion order is age (oldest first). */
  implicit: Map<string, number>;
  /** Prefix digest → when the explicit entry expires. */
  explicit: Map<string, number>;
};

export function createContextCache(
  options: { now?: () => number; implicitEntries?: number } = {},
): ContextCache {
  const now = options.now ?? Date.now;
  const implicitEntries = options.implicitEntries ?? 200_000;
  const stores = new Map<string, Store>();
  const storeOf = (key: string): Store => {
    let store = stores.get(key);
    if (!store) {
      store = { implicit: new Map(), explicit: new Map() };
      stores.set(key, store);
    }
    return store;
  };

  return {
    account(key, blocks) {
      const store = storeOf(key);
      const prefixes = prefixDigests(blocks);
      const cumulative: number[] = [];
      let sum = 0;
      for (const block of blocks) {
        sum += block.tokens;
        cumulative.push(sum);
      }
      const markers = blocks.flatMap((block, i) => (block.marked ? [i] : []));
      if (markers.length > maxMarkers) {
        throw new Error(
          `at most ${maxMarkers} cache_control markers per request; this one has ${markers.length}`,
        );
      }
      if (markers.length === 0) {
        let cachedTokens = 0;
        for (let i = blocks.length - 1; i >= 0; i--) {
          const tokens = store.implicit.get(prefixes[i] as string);
          if (tokens !== undefined && tokens >= implicitMinTokens) {
            cachedTokens = tokens;
            break;
          }
        }
        return {
          mode: "implicit",
          cachedTokens,
          creationTokens: 0,
          commit: () => {
            prefixes.forEach((digest, i) => {
              store.implicit.delete(digest);
              store.implicit.set(digest, cumulative[i] as number);
            });
            for (const oldest of store.implicit.keys()) {
              if (store.implicit.size <= implicitEntries) break;
              store.implicit.delete(oldest);
            }
          },
        };
      }
      const at = now();
      let hit = -1;
      for (const marker of markers) {
        for (let i = marker; i >= Math.max(0, marker - markerLookBack); i--) {
          const expires = store.explicit.get(prefixes[i] as string);
          if (expires !== undefined && expires > at) {
            if (i > hit) hit = i;
            break;
          }
        }
      }
      const cachedTokens = hit >= 0 ? (cumulative[hit] as number) : 0;
      if (hit >= 0) store.explicit.set(prefixes[hit] as string, at + explicitLifetimeMs);
      const creating = markers.filter((marker) => {
        const expires = store.explicit.get(prefixes[marker] as string);
        return (
          (cumulative[marker] as number) >= explicitMinTokens && (expires === undefined || expires <= at)
        );
      });
      const furthest = creating.at(-1);
      const creationTokens =
        furthest === undefined ? 0 : Math.max(0, (cumulative[furthest] as number) - cachedTokens);
      return {
        mode: "explicit",
        cachedTokens,
        creationTokens,
        commit: () => {
          const created = now();
          for (const marker of creating)
            store.explicit.set(prefixes[marker] as string, created + explicitLifetimeMs);
        },
      };
    },
  };
}

/** Digest of each prefix: blocks 0..i. */
function prefixDigests(blocks: readonly PromptBlock[]): string[] {
  const digests: string[] = [];
  let previous = "";
  for (const block of blocks) {
    previous = Bun.hash(`${previous}/${block.digest}`).toString(36);
    digests.push(previous);
  }
  return digests;
}
