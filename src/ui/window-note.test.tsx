import { expect, test } from "bun:test";
import { TimelinePage } from "./pages.tsx";
import type { Timeline, TimelineExchange } from "./read-timeline.ts";

const exchange = (engaged: boolean): TimelineExchange => ({
  id: "ex-1",
  protocol: "gemini",
  path: "/e/1/gemini",
  stages: [],
  clientImages: [],
  upstreamImages: [],
  decision: {
    policy: "identity",
    estimate_before: 900_000,
    estimate_after: 500_000,
    reduced: engaged,
    images_omitted: engaged ? [{ toolCallId: "call_0", index: 1 }] : [],
    blocks_removed: [],
    window: {
      max_input_tokens: 30720,
      limit_tokens: 27648,
      target_tokens: 21504,
      prompt_tokens_before: engaged ? 28100 : 9000,
      prompt_tokens_after: engaged ? 21300 : 9000,
      engaged,
    },
  },
  imageStats: undefined,
  attempts: [],
  usage: undefined,
  cost: undefined,
  upstream: { queueMs: 0, throttled: 0, retries: 0 },
  status: undefined,
  calls: [],
});

const render = (x: TimelineExchange) => {
  const timeline: Timeline = { exchanges: [x], refusals: [], otherLedger: [], auxiliary: [], stamp: 0 };
  const page = TimelinePage({
    episode: { id: "1", state: "finished" },
    timeline,
    page: 1,
    pages: 1,
    exchanges: [x],
  });
  return String(page);
};

test("an exchange the window guard reduced says so on the episode's page, with its figures", () => {
  const html = render(exchange(true));
  expect(html).toContain("the model&#39;s window: prompt ~28100 → ~21300 tokens");
  expect(html).toContain("max_input_tokens 30720");
});

test("an exchange under the window shows no window note", () => {
  expect(render(exchange(false))).not.toContain("the model&#39;s window");
});
