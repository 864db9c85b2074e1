import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { decodeBase64 } from "./base64.ts";
import { sha256Hex, sha256OfBase64 } from "./sha256.ts";

describe("the SHA-256 of base64 text", () => {
  test("is the SHA-256 of exactly the bytes the text decodes to (whitespace, padding, stray bits too)", () => {
    // The image cache's key and a blob's name rest on this: a different digest for the same
    // bytes costs a conversion, the same digest for different bytes would be a wrong picture.
    const base64ish = fc.stringMatching(/^[A-Za-z0-9+/ \n\r\t]{0,64}={0,2}$/);
    fc.assert(
      fc.property(base64ish, (text) => {
        const bytes = decodeBase64(text);
        if (bytes) expect(sha256OfBase64(text)).toBe(sha256Hex(bytes));
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), (bytes) => {
        expect(sha256OfBase64(bytes.toBase64())).toBe(sha256Hex(bytes));
      }),
    );
  });
});
