import { expect, test } from "bun:test";
import { bareExchange, renderTimeline } from "../../test/support/timeline-page.ts";
import { exchangeCost } from "../pricing/exchange-cost.ts";
import { modelPriceSchema } from "../pricing/price-table.ts";
import { EpisodeListPage } from "./pages.tsx";
import type { TimelineExchange } from "./read-timeline.ts";

const exchange = (cost: TimelineExchange["cost"]): TimelineExchange => bareExchange({ cost });
const render = renderTimeline;

test("the page shows each priced exchange's cost per rate and the episode's total", () => {
  const cost = exchangeCost({
    model: "qwen3-vl-plus",
    currency: "CNY",
    price: modelPriceSchema.parse({ input: 1, output: 10 }),
    usages: [{ inputTokens: 10_000, cachedInputTokens: 8_000, outputTokens: 500 }],
    cache: "implicit",
  });
  const html = render(exchange(cost), {
    currency: "CNY",
    total: "0.0172",
    exchanges: 2,
    tokens: { input: 4_000, cache_hit: 16_000, cache_creation: 0, output: 1_000 },
  });
  expect(html).toContain(
    "cost: 0.0086 CNY (input 0.002 · cache hit 0.0016, implicit · cache creation 0 · output 0.005)",
  );
  expect(html).toContain(
    "cost: 0.0172 CNY over 2 priced exchanges (tokens: 4000 input, 16000 cache hit, 0 cache creation, 1000 output)",
  );
});

test("without a price no cost is shown", () => {
  const html = render(exchange(undefined), null);
  expect(html).not.toContain("cost:");
});

test("the episode list shows each episode's cost with its currency", () => {
  const row = {
    id: "ep_1",
    state: "finished",
    client: "codex",
    model: "qwen3-vl-plus",
    turns: 2,
    toolCalls: 1,
    failures: 0,
    awaitingApproval: 0,
    createdAt: "2026-12-05T02:00:00.000Z",
  };
  const html = String(
    EpisodeListPage({
      rows: [
        { ...row, cost: "0.0172 CNY" },
        { ...row, id: "ep_2", cost: "" },
      ],
      page: 1,
      pages: 1,
      total: 2,
    }),
  );
  expect(html).toContain("<th>cost</th>");
  expect(html).toContain('<td class="cost">0.0172 CNY</td>');
  expect(html).toContain('<td class="cost"></td>');
});
