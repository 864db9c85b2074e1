import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SidecarError } from "../lib/errors.ts";
import { canonicalArguments } from "./canonical-arguments.ts";

describe("canonicalArguments", () => {
  test("sorts keys recursively, arrays keep their order", () => {
    expect(canonicalArguments({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: "x" } })).toBe(
      '{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  test("drops _callID and wait_for_previous at the top level only", () => {
    expect(canonicalArguments({ nonce: "n1", _callID: "call_1", wait_for_previous: true })).toBe(
      '{"nonce":"n1"}',
    );
    expect(canonicalArguments({ inner: { _callID: "x", wait_for_previous: false } })).toBe(
      '{"inner":{"_callID":"x","wait_for_previous":false}}',
    );
  });

  test("distinguishes values that differ only in type", () => {
    expect(canonicalArguments({ a: 1 })).not.toBe(canonicalArguments({ a: "1" }));
    expect(canonicalArguments({ a: null })).not.toBe(canonicalArguments({}));
  });

  test("equals JSON.parse round trip of key-permuted JSON text", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const reparsed = JSON.parse(JSON.stringify(value));
        expect(canonicalArguments(reparsed)).toBe(canonicalArguments(value));
        expect(JSON.parse(canonicalArguments(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  test("key order never matters", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (object) => {
        const reversed = Object.fromEntries(Object.entries(object).reverse());
        expect(canonicalArguments(reversed)).toBe(canonicalArguments(object));
      }),
    );
  });

  test("refuses values JSON cannot carry", () => {
    expect(() => canonicalArguments({ a: Number.NaN })).toThrow(SidecarError);
    expect(() => canonicalArguments({ a: { b: () => 1 } })).toThrow("arguments.a.b is a function");
    expect(() => canonicalArguments({ when: new Date(0) })).toThrow("non-plain object");
  });
});
