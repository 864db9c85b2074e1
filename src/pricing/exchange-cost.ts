/**
 * What one model exchange cost, from the usage the upstream reported on each attempt
 * it billed and the model's prices (price-table.ts; docs/pricing.md). The arithmetic
 * is exact: rates are integers in billionths of the currency per million tokens and
 * costs integers in 10⁻¹⁵ of the currency (bigint), written as decimal strings, so an
 * episode's total is the exact sum of its exchanges' costs.
 *
 * The prompt tokens are split by what the provider's cache did with them: served
 * (a hit, at the implicit or the explicit rate: the two are exclusive per request),
 * written to a new explicit entry, or neither (the input price).
 */
import { z } from "zod";
import type { HubUsage } from "../hub/schema.ts";
import { formatDecimalAmount, parseDecimalAmount } from "../lib/decimal-amount.ts";
import { defaultCachePercent, type ModelPrice, priceDecimals } from "./price-table.ts";

/** Fractional digits of a rate (currency per million tokens) and of a cost (currency). */
const rateScale = 9;
export const costScale = rateScale + 6;

/** Which cache rates a request pays: explicit when it carried `cache_control` markers, implicit otherwise. */
export const cacheModeSchema = z.enum(["implicit", "explicit"]);
export type CacheMode = z.infer<typeof cacheModeSchema>;

const amountSchema = z.string().regex(/^\d+(\.\d+)?$/);

/** An exchange's cost as its `upstream_response` record line holds it (docs/records.md). */
export const exchangeCostSchema = z.object({
  /** The model priced (the episode's, as sent upstream). */
  model: z.string(),
  currency: z.string(),
  cache: cacheModeSchema,
  /** Attempts whose usage the upstream reported, summed here (a failed attempt reports none). */
  billed_attempts: z.number().int().nonnegative(),
  /** Tokens per rate, summed over the billed attempts. */
  tokens: z.object({
    input: z.number().int().nonnegative(),
    cache_hit: z.number().int().nonnegative(),
    cache_creation: z.number().int().nonnegative(),
    output: z.number().int().nonnegative(),
  }),
  /** Cost per rate and in total, exact decimals in `currency`. */
  input: amountSchema,
  cache_hit: amountSchema,
  cache_creation: amountSchema,
  output: amountSchema,
  total: amountSchema,
});
export type ExchangeCost = z.infer<typeof exchangeCostSchema>;

/** A price's rate in billionths per million tokens (the table's prices are validated decimals). */
function rateOf(price: string): bigint {
  const parsed = parseDecimalAmount(price, rateScale, priceDecimals);
  if (!parsed.ok) throw new Error(`price table: ${parsed.problem}`);
  return parsed.value;
}

/** The model's rate for a cache kind: its own price, or the documented percentage of the input price. */
function cacheRate(price: ModelPrice, kind: keyof typeof defaultCachePercent): bigint {
  const own = price[kind];
  return own === undefined ? (rateOf(price.input) * defaultCachePercent[kind]) / 100n : rateOf(own);
}

/**
 * The cost of an exchange: `usages` are those the upstream reported, one per billed
 * attempt (retries the provider answered included); `cache` is the request's mode.
 */
export function exchangeCost(options: {
  model: string;
  currency: string;
  price: ModelPrice;
  usages: readonly HubUsage[];
  cache: CacheMode;
}): ExchangeCost {
  const { price, usages, cache } = options;
  const tokens = { input: 0, cache_hit: 0, cache_creation: 0, output: 0 };
  for (const usage of usages) {
    const hit = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
    const creation = Math.min(usage.cacheCreationInputTokens ?? 0, usage.inputTokens - hit);
    tokens.input += usage.inputTokens - hit - creation;
    tokens.cache_hit += hit;
    tokens.cache_creation += creation;
    tokens.output += usage.outputTokens;
  }
  const input = BigInt(tokens.input) * rateOf(price.input);
  const hit =
    BigInt(tokens.cache_hit) *
    cacheRate(price, cache === "explicit" ? "explicit_cache_hit" : "implicit_cache_hit");
  const creation = BigInt(tokens.cache_creation) * cacheRate(price, "explicit_cache_creation");
  const output = BigInt(tokens.output) * rateOf(price.output);
  const format = (value: bigint) => formatDecimalAmount(value, costScale);
  return {
    model: options.model,
    currency: options.currency,
    cache,
    billed_attempts: usages.length,
    tokens,
    input: format(input),
    cache_hit: format(hit),
    cache_creation: format(creation),
    output: format(output),
    total: format(input + hit + creation + output),
  };
}

/** A cost's amount as an exact integer (10⁻¹⁵ of its currency), for sums. */
export function costAmount(amount: string): bigint {
  const parsed = parseDecimalAmount(amount, costScale);
  if (!parsed.ok) throw new Error(`cost amount: ${parsed.problem}`);
  return parsed.value;
}

/** A sum of costs as a decimal in the currency. */
export function formatCost(amount: bigint): string {
  return formatDecimalAmount(amount, costScale);
}

/** An episode's cost so far: the exact sum of its exchanges' (episode status, docs/pricing.md). */
export const episodeCostSchema = z.object({
  currency: z.string(),
  total: amountSchema,
  /** Exchanges with a recorded cost. */
  exchanges: z.number().int().nonnegative(),
  tokens: exchangeCostSchema.shape.tokens,
});
export type EpisodeCost = z.infer<typeof episodeCostSchema>;

/** The episode's cost with one more exchange's. */
export function addExchangeCost(sum: EpisodeCost | undefined, cost: ExchangeCost): EpisodeCost {
  const tokens = sum?.tokens ?? { input: 0, cache_hit: 0, cache_creation: 0, output: 0 };
  return {
    currency: cost.currency,
    total: formatCost(costAmount(sum?.total ?? "0") + costAmount(cost.total)),
    exchanges: (sum?.exchanges ?? 0) + 1,
    tokens: {
      input: tokens.input + cost.tokens.input,
      cache_hit: tokens.cache_hit + cost.tokens.cache_hit,
      cache_creation: tokens.cache_creation + cost.tokens.cache_creation,
      output: tokens.output + cost.tokens.output,
    },
  };
}
