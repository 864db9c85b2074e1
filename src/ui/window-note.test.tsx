import { expect, test } from "bun:test";
import { bareExchange, renderTimeline } from "../../test/support/timeline-page.ts";
import type { TimelineExchange } from "./read-timeline.ts";

const exchange = (engaged: boolean): TimelineExchange =>
  bareExchange({
    id: "ex-1",
    protocol: "gemini",
    path: "/e/1/gemini",
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
  });

const render = (x: TimelineExchange) => renderTimeline(x);

test("an exchange the window guard reduced says so on the episode's page, with its figures", () => {
  const html = render(exchange(true));
  expect(html).toContain("the model&#39;s window: prompt ~28100 → ~21300 tokens");
  expect(html).toContain("max_input_tokens 30720");
});

test("an exchange under the window shows no window note", () => {
  expect(render(exchange(false))).not.toContain("the model&#39;s window");
});
