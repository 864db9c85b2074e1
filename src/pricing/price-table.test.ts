import { describe, expect, test } from "bun:test";
import { priceTableSchema } from "./price-table.ts";
import { createPricing } from "./pricing.ts";

/** Each problem as `key.path: message`, the way the config loader names it. */
function problemsOf(value: unknown): string[] {
  const parsed = priceTableSchema.safeParse(value);
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
}

describe("the price table", () => {
  test("prices as numbers or decimal strings, kept as their decimal text; cache rates optional", () => {
    expect(
      priceTableSchema.parse({
        currency: "CNY",
        models: { "qwen3-vl-plus": { input: 1, output: "10", explicit_cache_hit: "0.1" } },
      }),
    ).toEqual({
      currency: "CNY",
      models: { "qwen3-vl-plus": { input: "1", output: "10", explicit_cache_hit: "0.1" } },
    });
  });

  test("a bad price, currency or key is refused naming the field", () => {
    expect(problemsOf({ currency: "yuan", models: {} })).toEqual([
      "currency: an ISO 4217 currency code in capitals, e.g. CNY or USD",
    ]);
    expect(problemsOf({ currency: "CNY", models: { m: { input: -1, output: 1 } } })).toEqual([
      'models.m.input: a price per million tokens: expected a non-negative decimal such as 0.8 or "1.25", got "-1"',
    ]);
    expect(problemsOf({ currency: "CNY", models: { m: { input: 1, output: "0.1234567" } } })).toEqual([
      'models.m.output: a price per million tokens: at most 6 decimal places, got "0.1234567"',
    ]);
    expect(problemsOf({ currency: "CNY", models: { m: { input: 1e-7, output: 1 } } })[0]).toStartWith(
      "models.m.input: a price per million tokens",
    );
    expect(problemsOf({ currency: "CNY", models: { m: { output: 1 } } })[0]).toStartWith("models.m.input:");
    expect(problemsOf({ currency: "CNY", models: { m: { input: 1, output: 1, cached: 0.2 } } })).toEqual([
      'models.m: Unrecognized key: "cached"',
    ]);
  });
});

test("price tiers go up by prompt length, each checked like the model's own rates", () => {
  const tier = (above: number) => ({ above_input_tokens: above, input: 2, output: 4 });
  expect(
    problemsOf({
      currency: "CNY",
      models: { m: { input: 1, output: 2, tiers: [tier(131_072), tier(131_072)] } },
    }),
  ).toEqual([
    "models.m.tiers.1.above_input_tokens: tiers go up by prompt length: must be over the previous tier's 131072",
  ]);
  expect(
    problemsOf({
      currency: "CNY",
      models: { m: { input: 1, output: 2, tiers: [{ ...tier(1_000), output: "x" }] } },
    })[0],
  ).toStartWith("models.m.tiers.0.output: a price per million tokens");
});

describe("pricing", () => {
  test("a model the table does not list has no cost, said once", () => {
    const unpriced: string[] = [];
    const pricing = createPricing(
      priceTableSchema.parse({ currency: "USD", models: { priced: { input: 1, output: 2 } } }),
      (model) => unpriced.push(model),
    );
    const usage = [{ inputTokens: 1_000_000, outputTokens: 1_000_000 }];
    expect(pricing.costOf("other", usage, "implicit")).toBeUndefined();
    expect(pricing.costOf("other", usage, "implicit")).toBeUndefined();
    expect(pricing.costOf("priced", usage, "implicit")).toMatchObject({ currency: "USD", total: "3" });
    expect(unpriced).toEqual(["other"]);
  });
});
