/**
 * What an episode keeps of the work done on its frozen values (frozen-json.ts): a
 * client resends the same members and history items every turn, the parse hands back
 * the same deep-frozen value for them, and each later stage (validation, translation,
 * measuring, serialising) keeps what it derived from such a value here, by object
 * identity. Every table is a WeakMap keyed by the value, so an entry lives no longer
 * than its value, and the whole store no longer than its episode: nothing of one
 * episode's reuse is held at module level or seen by another episode.
 * A memo gives the answer computing afresh gives; code without a store computes afresh.
 */

/** One episode's memos of work done on its frozen values. */
export interface FrozenMemos {
  /** JSON.stringify(value), computed once per frozen object (afresh for any other value). */
  json(value: unknown): string;
  /** UTF-8 length of JSON.stringify(value), computed once per frozen object. */
  jsonBytes(value: object): number;
  /** Marks a value the parse took from an earlier request's member (parse-json-body.ts). */
  markRepeated(value: object): void;
  /** Whether `value` is a repeated member's value: deep-frozen, the same object on every turn that resends it. */
  isRepeated(value: unknown): value is object;
  /**
   * A memo table of the caller's own, one per `owner` (the function or schema that keeps
   * it): created empty on first use, then the same table for the episode's life.
   */
  table<K extends object, V>(owner: object): WeakMap<K, V>;
}

function isFrozenObject(value: unknown): value is object {
  return value !== null && typeof value === "object" && Object.isFrozen(value);
}

export function createFrozenMemos(): FrozenMemos {
  const jsonOf = new WeakMap<object, string>();
  const bytesOf = new WeakMap<object, number>();
  const repeated = new WeakSet<object>();
  const tables = new WeakMap<object, WeakMap<object, unknown>>();
  const memos: FrozenMemos = {
    json(value) {
      if (!isFrozenObject(value)) return JSON.stringify(value);
      let json = jsonOf.get(value);
      if (json === undefined) {
        json = JSON.stringify(value);
        jsonOf.set(value, json);
      }
      return json;
    },
    jsonBytes(value) {
      if (!isFrozenObject(value)) return Buffer.byteLength(JSON.stringify(value), "utf8");
      let bytes = bytesOf.get(value);
      if (bytes === undefined) {
        bytes = Buffer.byteLength(memos.json(value), "utf8");
        bytesOf.set(value, bytes);
      }
      return bytes;
    },
    markRepeated(value) {
      repeated.add(value);
    },
    isRepeated(value): value is object {
      return value !== null && typeof value === "object" && repeated.has(value);
    },
    table<K extends object, V>(owner: object): WeakMap<K, V> {
      let table = tables.get(owner);
      if (table === undefined) {
        table = new WeakMap();
        tables.set(owner, table);
      }
      return table as WeakMap<K, V>;
    },
  };
  return memos;
}
