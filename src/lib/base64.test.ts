import { expect, test } from "bun:test";
import fc from "fast-check";
import { base64DecodedLength, decodeBase64, isBase64 } from "./base64.ts";

test("base64DecodedLength is the length decodeBase64 gives, for every text it accepts", () => {
  fc.assert(
    fc.property(fc.stringMatching(/^[A-Za-z0-9+/ \n\r\t]{0,64}(?:=[ \n]?){0,2}$/), (text) => {
      expect(isBase64(text)).toBe(true);
      expect(base64DecodedLength(text)).toBe(decodeBase64(text)?.length as number);
    }),
    { numRuns: 3000 },
  );
  for (const length of [0, 1, 2, 3, 4, 5, 100])
    expect(base64DecodedLength(Buffer.alloc(length, 7).toString("base64"))).toBe(length);
});

test("text outside the alphabet is not base64", () => {
  for (const text of ["ab*c", "abc=d", "a===", "\u00e9"]) {
    expect(isBase64(text)).toBe(false);
    expect(decodeBase64(text)).toBeUndefined();
  }
});
