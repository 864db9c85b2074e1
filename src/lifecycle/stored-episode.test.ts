import { describe, expect, test } from "bun:test";
import { pricedAttempt } from "../../test/support/exchange-line-fields.ts";
import { addExchangeCost } from "../pricing/exchange-cost.ts";
import { restoredCost, storedEpisodeSchema } from "./stored-episode.ts";

const priced = pricedAttempt;
const line = (exchange: string, cost?: ReturnType<typeof priced>) => ({
  v: 3,
  exchange,
  stage: "upstream_response",
  attempts: [],
  raw: null,
  ...(cost ? { cost } : {}),
});
const stored = (cost: unknown) =>
  storedEpisodeSchema.parse({
    id: "ep_0123456789abcdef",
    created_at: "2026-12-05T00:00:00.000Z",
    state: "running",
    model: "qwen3-vl-plus",
    cost,
  });

describe("a restored episode's cost", () => {
  test("is its records' sum, not episode.json's, which may lag them", () => {
    const first = priced("CNY", 1_000);
    const lagging = stored(addExchangeCost(undefined, first));
    const lines = [
      line("ex_0001", first),
      { v: 3, exchange: "ex_0001", stage: "status" },
      line("ex_0002", priced("CNY", 3_000)),
    ];
    expect(restoredCost(lagging, lines)).toEqual({
      cost: {
        currency: "CNY",
        total: "0.004",
        exchanges: 2,
        tokens: { input: 4_000, cache_hit: 0, cache_creation: 0, output: 0 },
      },
    });
  });

  test("is episode.json's when the records hold none (older lines), and none when neither has one", () => {
    const kept = addExchangeCost(undefined, priced("CNY", 1_000));
    expect(restoredCost(stored(kept), [line("ex_0001")])).toEqual({ cost: kept });
    expect(restoredCost(stored(null), [line("ex_0001")])).toEqual({});
  });

  test("costs in two currencies are never added: episode.json's stays, each currency's sum is said", () => {
    const kept = addExchangeCost(undefined, priced("CNY", 1_000));
    const result = restoredCost(stored(kept), [
      line("ex_0001", priced("CNY", 1_000)),
      line("ex_0002", priced("USD", 2_000)),
    ]);
    expect(result.cost).toEqual(kept);
    expect(result.perCurrency?.map((sum) => `${sum.total} ${sum.currency}`)).toEqual([
      "0.001 CNY",
      "0.002 USD",
    ]);
  });
});
