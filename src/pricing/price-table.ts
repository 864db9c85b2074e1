/**
 * The operator's price table (config `upstream.prices`, docs/pricing.md): what each
 * upstream model costs per million tokens, in one named currency. Optional: without
 * it the sidecar states no cost anywhere, and a model it does not list has none
 * (never a guessed price). The cache rates default to the provider's documented
 * multipliers of the input price (Model Studio's context cache: an implicit hit at
 * 20%, an explicit hit at 10%, an explicit cache creation at 125%); a contract that
 * prices them otherwise names them.
 *
 * Prices are read as exact decimals (at most `priceDecimals` places) and kept as
 * integers (src/lib/decimal-amount.ts), so costs add up without float drift.
 */
import { z } from "zod";
import { parseDecimalAmount } from "../lib/decimal-amount.ts";

/** Decimal places a price may have (per million tokens: a millionth of the currency is finer than any price list). */
export const priceDecimals = 6;

/** A price per million tokens: a JSON number or a decimal string, kept as its canonical decimal text. */
const priceSchema = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const text = typeof value === "number" ? String(value) : value.trim();
  const parsed = parseDecimalAmount(text, priceDecimals);
  if (!parsed.ok) {
    ctx.addIssue({ code: "custom", message: `a price per million tokens: ${parsed.problem}` });
    return z.NEVER;
  }
  return text;
});

/** The rates of one price tier, each per million tokens in the table's currency. */
const ratesShape = {
  /** Prompt tokens the cache neither served nor wrote. */
  input: priceSchema,
  /** Answer tokens. */
  output: priceSchema,
  /** Prompt tokens served by the implicit cache; absent = 20% of `input`. */
  implicit_cache_hit: priceSchema.optional(),
  /** Prompt tokens served by an explicit cache entry; absent = 10% of `input`. */
  explicit_cache_hit: priceSchema.optional(),
  /** Prompt tokens written to a new explicit cache entry; absent = 125% of `input`. */
  explicit_cache_creation: priceSchema.optional(),
};
export const priceRatesSchema = z.object(ratesShape).strict();
export type PriceRates = z.infer<typeof priceRatesSchema>;

/**
 * A tier of a model priced by prompt length (Model Studio prices some models so): its rates
 * apply to a request whose prompt has more than `above_input_tokens` tokens (cached ones
 * included), up to the next tier's bound.
 */
const priceTierSchema = z.object({ above_input_tokens: z.number().int().positive(), ...ratesShape }).strict();
export type PriceTier = z.infer<typeof priceTierSchema>;

/** One model's prices: its rates, and optionally dearer tiers for longer prompts. */
export const modelPriceSchema = z
  .object({ ...ratesShape, tiers: z.array(priceTierSchema).optional() })
  .strict()
  .superRefine((price, ctx) => {
    const tiers = price.tiers ?? [];
    for (const [i, tier] of tiers.entries()) {
      const previous = tiers[i - 1];
      if (previous && tier.above_input_tokens <= previous.above_input_tokens)
        ctx.addIssue({
          code: "custom",
          path: ["tiers", i, "above_input_tokens"],
          message: `tiers go up by prompt length: must be over the previous tier's ${previous.above_input_tokens}`,
        });
    }
  });
export type ModelPrice = z.infer<typeof modelPriceSchema>;

/** The rates for a request whose prompt has `promptTokens` tokens: the highest tier it is above, else the model's own. */
export function ratesFor(price: ModelPrice, promptTokens: number): { rates: PriceRates; above?: number } {
  const tier = price.tiers?.findLast((t) => promptTokens > t.above_input_tokens);
  if (!tier) return { rates: price };
  const { above_input_tokens: above, ...rates } = tier;
  return { rates, above };
}

export const priceTableSchema = z
  .object({
    /** The currency every price is in, as its ISO 4217 code (e.g. CNY, USD): named wherever a cost is. */
    currency: z.string().regex(/^[A-Z]{3}$/, "an ISO 4217 currency code in capitals, e.g. CNY or USD"),
    /** Prices by model id (the id episodes choose, as in upstream.model). */
    models: z.record(z.string().min(1), modelPriceSchema),
  })
  .strict();
export type PriceTable = z.infer<typeof priceTableSchema>;

/** The documented multipliers of the input price, in percent, for a cache rate the table leaves out. */
export const defaultCachePercent = {
  implicit_cache_hit: 20n,
  explicit_cache_hit: 10n,
  explicit_cache_creation: 125n,
} as const;
