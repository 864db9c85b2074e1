import { expect, test } from "bun:test";
import { bareMetrics } from "../../test/support/bare-metrics.ts";
import { exchangeCost } from "../pricing/exchange-cost.ts";
import { modelPriceSchema } from "../pricing/price-table.ts";

test("ura_upstream_cost_total sums the recorded costs exactly, by model and currency", async () => {
  const metrics = bareMetrics();
  const price = modelPriceSchema.parse({ input: "0.1", output: 0 });
  const usage = { inputTokens: 3, outputTokens: 0 };
  const costs = [
    ...Array.from({ length: 10 }, () =>
      exchangeCost({ model: "m", currency: "CNY", price, usages: [usage], cache: "implicit" }),
    ),
    exchangeCost({ model: "other", currency: "CNY", price, usages: [usage, usage], cache: "implicit" }),
  ];
  costs.forEach((cost, i) => {
    const at = { kind: "exchange_stage", episode: "ep_1", exchange: `ex_${i}`, at: 0 } as const;
    metrics.observer.observe({
      ...at,
      line: { stage: "client_request", protocol: "responses", path: "/v1/responses" },
    });
    metrics.observer.observe({ ...at, line: { stage: "upstream_response", attempts: [], raw: null, cost } });
  });
  // Ten float additions of 0.0000003 make 0.0000029999999999999997.
  expect(costs.slice(0, 10).reduce((sum, cost) => sum + Number(cost.total), 0)).not.toBe(0.000003);
  const text = await metrics.render();
  expect(text).toContain('ura_upstream_cost_total{model="m",currency="CNY"} 0.000003\n');
  expect(text).toContain('ura_upstream_cost_total{model="other",currency="CNY"} 6e-7\n');
});
