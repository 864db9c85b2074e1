/**
 * The price table in use (config `upstream.prices`): the cost of an exchange of a
 * model it lists, none for a model it does not, said once per model in the log so
 * that a missing price is noticed without a line per exchange.
 */
import type { HubUsage } from "../hub/schema.ts";
import { type CacheMode, type ExchangeCost, exchangeCost } from "./exchange-cost.ts";
import type { PriceTable } from "./price-table.ts";

export interface Pricing {
  /** The currency of every cost. */
  readonly currency: string;
  /** The cost of an exchange of `model`, or undefined when the table has no price for it. */
  costOf(model: string, usages: readonly HubUsage[], cache: CacheMode): ExchangeCost | undefined;
}

export function createPricing(table: PriceTable, unpriced: (model: string) => void): Pricing {
  const told = new Set<string>();
  return {
    currency: table.currency,
    costOf(model, usages, cache) {
      const price = Object.hasOwn(table.models, model) ? table.models[model] : undefined;
      if (price === undefined) {
        if (!told.has(model)) {
          told.add(model);
          unpriced(model);
        }
        return undefined;
      }
      return exchangeCost({ model, currency: table.currency, price, usages, cache });
    },
  };
}
