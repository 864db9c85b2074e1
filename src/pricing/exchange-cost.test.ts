import { describe, expect, test } from "bun:test";
import { addExchangeCost, costAmount, type EpisodeCost, exchangeCost } from "./exchange-cost.ts";
import { type ModelPrice, modelPriceSchema } from "./price-table.ts";

const price = (value: unknown): ModelPrice => modelPriceSchema.parse(value);

describe("exchangeCost", () => {
  test("an implicit hit at 20% of the input price, the rest at the input price, the answer at the output price", () => {
    const cost = exchangeCost({
      model: "qwen3-vl-plus",
      currency: "CNY",
      price: price({ input: 1, output: 10 }),
      usages: [{ inputTokens: 10_000, cachedInputTokens: 8_000, outputTokens: 500 }],
      cache: "implicit",
    });
    expect(cost).toEqual({
      model: "qwen3-vl-plus",
      currency: "CNY",
      cache: "implicit",
      billed_attempts: 1,
      tokens: { input: 2_000, cache_hit: 8_000, cache_creation: 0, output: 500 },
      input: "0.002",
      cache_hit: "0.0016",
      cache_creation: "0",
      output: "0.005",
      total: "0.0086",
    });
  });

  test("an explicit request: a hit at 10%, the creation at 125%, exactly", () => {
    const cost = exchangeCost({
      model: "qwen3-max",
      currency: "USD",
      price: price({ input: "0.8", output: 3.2 }),
      usages: [
        { inputTokens: 5_000, cachedInputTokens: 2_048, cacheCreationInputTokens: 1_024, outputTokens: 100 },
      ],
      cache: "explicit",
    });
    expect(cost.tokens).toEqual({ input: 1_928, cache_hit: 2_048, cache_creation: 1_024, output: 100 });
    // 1928 × 0.8 + 2048 × 0.08 + 1024 × 1.0 + 100 × 3.2, per million.
    expect([cost.input, cost.cache_hit, cost.cache_creation, cost.output, cost.total]).toEqual([
      "0.0015424",
      "0.00016384",
      "0.001024",
      "0.00032",
      "0.00305024",
    ]);
  });

  test("a cache rate the table names replaces the documented multiplier", () => {
    const cost = exchangeCost({
      model: "m",
      currency: "CNY",
      price: price({
        input: 1,
        output: 1,
        implicit_cache_hit: 0.5,
        explicit_cache_hit: 0.25,
        explicit_cache_creation: 2,
      }),
      usages: [
        {
          inputTokens: 3_000_000,
          cachedInputTokens: 1_000_000,
          cacheCreationInputTokens: 1_000_000,
          outputTokens: 0,
        },
      ],
      cache: "explicit",
    });
    expect([cost.input, cost.cache_hit, cost.cache_creation, cost.total]).toEqual(["1", "0.25", "2", "3.25"]);
    const implicit = exchangeCost({
      model: "m",
      currency: "CNY",
      price: price({ input: 1, output: 1, implicit_cache_hit: 0.5 }),
      usages: [{ inputTokens: 1_000_000, cachedInputTokens: 1_000_000, outputTokens: 0 }],
      cache: "implicit",
    });
    expect(implicit.cache_hit).toBe("0.5");
  });

  test("every billed attempt counts (a refused answer and its retry); a cache figure over the prompt is capped", () => {
    const cost = exchangeCost({
      model: "m",
      currency: "CNY",
      price: price({ input: 2, output: 8 }),
      usages: [
        { inputTokens: 1_000, outputTokens: 50 },
        { inputTokens: 1_000, cachedInputTokens: 5_000, outputTokens: 60 },
      ],
      cache: "implicit",
    });
    expect(cost.billed_attempts).toBe(2);
    expect(cost.tokens).toEqual({ input: 1_000, cache_hit: 1_000, cache_creation: 0, output: 110 });
    // 1000 × 2 + 1000 × 0.4 + 110 × 8, per million.
    expect(cost.total).toBe("0.00328");
  });

  test("a model priced by prompt length: each attempt at the tier its whole prompt (cached tokens too) is above", () => {
    const tiered = price({
      input: "0.8",
      output: 2,
      tiers: [
        { above_input_tokens: 131_072, input: "2.4", output: 20 },
        { above_input_tokens: 262_144, input: "4.8", output: 48, implicit_cache_hit: 1 },
      ],
    });
    const cost = (inputTokens: number, cachedInputTokens = 0) =>
      exchangeCost({
        model: "qwen-plus",
        currency: "CNY",
        price: tiered,
        usages: [{ inputTokens, cachedInputTokens, outputTokens: 1_000 }],
        cache: "implicit",
      });
    // 131,072 × 0.8 + 1,000 × 2, per million: the bound itself is still the base rate.
    expect(cost(131_072)).toMatchObject({ total: "0.1068576" });
    expect(cost(131_072).tier_above_input_tokens).toBeUndefined();
    // 131,073 − 100,000 at 2.4, 100,000 at 20% of 2.4, 1,000 at 20.
    expect(cost(131_073, 100_000)).toMatchObject({
      tier_above_input_tokens: 131_072,
      input: "0.0745752",
      cache_hit: "0.048",
      output: "0.02",
    });
    // Above the second bound its own cache rate replaces the multiplier.
    expect(cost(300_000, 200_000)).toMatchObject({
      tier_above_input_tokens: 262_144,
      input: "0.48",
      cache_hit: "0.2",
      output: "0.048",
      total: "0.728",
    });
  });

  test("no billed attempt costs nothing", () => {
    const cost = exchangeCost({
      model: "m",
      currency: "CNY",
      price: price({ input: 2, output: 8 }),
      usages: [],
      cache: "implicit",
    });
    expect(cost).toMatchObject({ billed_attempts: 0, total: "0" });
  });
});

describe("an episode's cost", () => {
  test("the exact sum of its exchanges', where adding floats drifts", () => {
    const one = exchangeCost({
      model: "m",
      currency: "CNY",
      price: price({ input: "0.1", output: 0 }),
      usages: [{ inputTokens: 3, outputTokens: 0 }],
      cache: "implicit",
    });
    expect(one.total).toBe("0.0000003");
    let sum: EpisodeCost | undefined;
    let floats = 0;
    for (let i = 0; i < 10; i++) {
      sum = addExchangeCost(sum, one);
      floats += Number(one.total);
    }
    expect(sum).toEqual({
      currency: "CNY",
      total: "0.000003",
      exchanges: 10,
      tokens: { input: 30, cache_hit: 0, cache_creation: 0, output: 0 },
    });
    expect(floats).not.toBe(0.000003);
    expect(costAmount(sum?.total ?? "")).toBe(3_000_000_000n);
  });
});
