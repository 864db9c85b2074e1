/**
 * Exact decimal amounts as integers at a fixed scale (bigint), so money adds up
 * without binary-float drift: `parseDecimalAmount("0.8", 9)` is 800000000n, and
 * `formatDecimalAmount(800000000n, 9)` is "0.8" again. Only plain non-negative
 * decimals are read (no sign, no exponent): an amount is written the way a price
 * list prints it.
 */

/** The amount at `scale` fractional digits, or why the text is not a plain decimal with at most `maxDecimals` places. */
export function parseDecimalAmount(
  text: string,
  scale: number,
  maxDecimals = scale,
): { ok: true; value: bigint } | { ok: false; problem: string } {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null)
    return {
      ok: false,
      problem: `expected a non-negative decimal such as 0.8 or "1.25", got ${JSON.stringify(text)}`,
    };
  const [, whole = "0", fraction = ""] = match;
  if (fraction.length > maxDecimals)
    return { ok: false, problem: `at most ${maxDecimals} decimal places, got ${JSON.stringify(text)}` };
  return {
    ok: true,
    value: BigInt(whole) * 10n ** BigInt(scale) + BigInt(fraction.padEnd(scale, "0") || "0"),
  };
}

/** The amount as a plain decimal, without trailing zeros ("0.0012", "3"). */
export function formatDecimalAmount(value: bigint, scale: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, "0");
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale).replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}
