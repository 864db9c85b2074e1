import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { PersistentMap } from "./persistent-map.ts";

describe("PersistentMap", () => {
  test("behaves as a Map, and every earlier version keeps its bindings", () => {
    const key = fc.oneof(fc.string({ maxLength: 4 }), fc.integer({ min: -40, max: 40 }));
    fc.assert(
      fc.property(fc.array(fc.tuple(key, fc.integer()), { maxLength: 200 }), (writes) => {
        const versions: Array<[PersistentMap<string | number, number>, Map<string | number, number>]> = [];
        let map = PersistentMap.empty<string | number, number>();
        let model = new Map<string | number, number>();
        for (const [k, v] of writes) {
          versions.push([map, model]);
          map = map.set(k, v);
          model = new Map(model).set(k, v);
        }
        versions.push([map, model]);
        for (const [persistent, expected] of versions) {
          expect(persistent.size).toBe(expected.size);
          expect(new Map(persistent)).toEqual(expected);
          for (const [k, v] of expected) expect(persistent.get(k)).toBe(v);
          for (const [k] of writes) expect(persistent.has(k)).toBe(expected.has(k));
        }
      }),
      { numRuns: 200 },
    );
  });

  test("keys whose hashes collide share a bucket and stay apart", () => {
    // An integer hashes to itself modulo 2^32, so i and i + 2^32 always collide.
    let map = PersistentMap.empty<string | number, string>();
    for (let i = 0; i < 3000; i++)
      map = map
        .set(i, `n${i}`)
        .set(i + 2 ** 32, `m${i}`)
        .set(`s${i}`, `s${i}`);
    expect(map.size).toBe(9000);
    for (let i = 0; i < 3000; i++) {
      expect(map.get(i)).toBe(`n${i}`);
      expect(map.get(i + 2 ** 32)).toBe(`m${i}`);
      expect(map.get(`s${i}`)).toBe(`s${i}`);
    }
    expect(map.set(7 + 2 ** 32, "again").get(7)).toBe("n7");
    expect(map.get(3000)).toBeUndefined();
  });

  test("an undefined value is a binding", () => {
    const map = PersistentMap.empty<string, undefined>().set("a", undefined);
    expect(map.has("a")).toBe(true);
    expect(map.size).toBe(1);
    expect(map.set("a", undefined).size).toBe(1);
  });
});
