import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseSharingBase64 } from "./parse-sharing-base64.ts";

describe("parseSharingBase64 (large bodies) gives exactly what JSON.parse gives", () => {
  const frame = Buffer.alloc(6000, 0x89).toString("base64");
  const dataUrl = `data:image/png;base64,${frame}`;

  test("long base64 strings anywhere a value can be", () => {
    const value = { a: dataUrl, b: [frame, { c: dataUrl, d: "short" }], e: [[frame]], f: 1 };
    const text = JSON.stringify(value);
    expect(parseSharingBase64(text)).toEqual(value);
  });

  test("where a long base64 run is not a whole string value it is parsed as it is", () => {
    for (const value of [
      { [frame]: 1, x: dataUrl }, // a key
      { x: `say "${frame}` }, // after an escaped quote, inside a longer string
      { x: `${frame}\n`, y: frame },
      JSON.parse(`{"__proto__":"${frame}","z":"${frame}"}`),
    ]) {
      const text = JSON.stringify(value);
      expect(parseSharingBase64(text)).toEqual(JSON.parse(text));
      expect(Object.getPrototypeOf(parseSharingBase64(text))).toBe(Object.prototype);
    }
  });

  test("invalid JSON fails with the message JSON.parse gives for the text as received", () => {
    const text = `{"a":"${frame}","b":nope}`;
    const message = (() => {
      try {
        JSON.parse(text);
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(() => parseSharingBase64(text)).toThrow(message as string);
  });

  test("random JSON with long base64 strings mixed in", () => {
    const leaf = fc.oneof(fc.constant(frame), fc.constant(dataUrl), fc.string(), fc.integer(), fc.boolean());
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        leaf,
        fc.array(tie("value")),
        fc.dictionary(fc.string(), tie("value")),
      ),
    })).value;
    fc.assert(
      fc.property(json, (value) => {
        const text = JSON.stringify(value);
        expect(parseSharingBase64(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });
});
