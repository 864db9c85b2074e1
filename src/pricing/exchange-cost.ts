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
import {
  defaultCachePercent,
  type ModelPrice,
  type PriceRates,
  priceDecimals,
  ratesFor,
} from "./price-table.ts";

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
  /** The prompt-length tier priced (its `above_input_tokens`); absent: the model's own rates. */
  tier_above_input_tokens: z.number().int().positive().optional(),
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

/** A tier's rate for a cache kind: its own price, or the documented percentage of its input price. */
function cacheRate(rates: PriceRates, kind: keyof typeof defaultCachePercent): bigint {
  const own = rates[kind];
  return own === undefined ? (rateOf(rates.input) * defaultCachePercent[kind]) / 100n : rateOf(own);
}

/**
 * The cost of an exchange: `usages` are those the upstream reported, one per billed
 * attempt (retries the provider answered included), each priced at the tier of its
 * prompt's length; `cache` is the request's mode.
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
  const amounts = { input: 0n, cache_hit: 0n, cache_creation: 0n, output: 0n };
  let tier: number | undefined;
  for (const usage of usages) {
    const hit = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
    const creation = Math.min(usage.cacheCreationInputTokens ?? 0, usage.inputTokens - hit);
    const input = usage.inputTokens - hit - creation;
    const { rates, above } = ratesFor(price, usage.inputTokens);
    if (above !== undefined) tier = Math.max(tier ?? 0, above);
    tokens.input += input;
    tokens.cache_hit += hit;
    tokens.cache_creation += creation;
    tokens.output += usage.outputTokens;
    amounts.input += BigInt(input) * rateOf(rates.input);
    amounts.cache_hit +=
      BigInt(hit) * cacheRate(rates, cache === "explicit" ? "explicit_cache_hit" : "implicit_cache_hit");
    amounts.cache_creation += BigInt(creation) * cacheRate(rates, "explicit_cache_creation");
    amounts.output += BigInt(usage.outputTokens) * rateOf(rates.output);
  }
  const format = (value: bigint) => formatDecimalAmount(value, costScale);
  return {
    model: options.model,
    currency: options.currency,
    cache,
    billed_attempts: usages.length,
    ...(tier !== undefined ? { tier_above_input_tokens: tier } : {}),
    tokens,
    input: format(amounts.input),
    cache_hit: format(amounts.cache_hit),
    cache_creation: format(amounts.cache_creation),
    output: format(amounts.output),
    total: format(amounts.input + amounts.cache_hit + amounts.cache_creation + amounts.output),
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

/**
 * Recorded costs summed per currency, in the order each currency first appears: costs
 * in two currencies are never added together (a reader of records written under two
 * price tables gets two totals).
 */
export function sumByCurrency(costs: readonly ExchangeCost[]): EpisodeCost[] {
  const sums = new Map<string, EpisodeCost>();
  for (const cost of costs) sums.set(cost.currency, addExchangeCost(sums.get(cost.currency), cost));
  return [...sums.values()];
}

/** "0.0172 CNY", several currencies joined by " + ". */
export const describeCosts = (sums: readonly Pick<EpisodeCost, "total" | "currency">[]): string =>
  sums.map((sum) => `${sum.total} ${sum.currency}`).join(" + ");

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
