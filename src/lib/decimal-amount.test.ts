import { describe, expect, test } from "bun:test";
import { formatDecimalAmount, parseDecimalAmount } from "./decimal-amount.ts";

describe("decimal amounts", () => {
  test("a plain decimal reads as an integer at the scale and formats back without trailing zeros", () => {
    expect(parseDecimalAmount("0.8", 9)).toEqual({ ok: true, value: 800_000_000n });
    expect(parseDecimalAmount("12", 3)).toEqual({ ok: true, value: 12_000n });
    expect(parseDecimalAmount("0.000001", 6)).toEqual({ ok: true, value: 1n });
    expect(formatDecimalAmount(800_000_000n, 9)).toBe("0.8");
    expect(formatDecimalAmount(12_000n, 3)).toBe("12");
    expect(formatDecimalAmount(1n, 15)).toBe("0.000000000000001");
    expect(formatDecimalAmount(0n, 15)).toBe("0");
  });

  test("a sign, an exponent, text or too many places is refused, saying why", () => {
    for (const text of ["-1", "1e-7", "abc", "", "1.", ".5"])
      expect(parseDecimalAmount(text, 9)).toMatchObject({
        ok: false,
        problem: expect.stringContaining("decimal"),
      });
    expect(parseDecimalAmount("0.1234567", 9, 6)).toEqual({
      ok: false,
      problem: 'at most 6 decimal places, got "0.1234567"',
    });
  });
});
