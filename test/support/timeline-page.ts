/**
 * The episode page rendered from a hand-made timeline (tests of src/ui/pages.tsx): an
 * exchange with nothing recorded but what a test gives, and the page of that one exchange.
 */
import { TimelinePage } from "../../src/ui/pages.tsx";
import type { Timeline, TimelineExchange } from "../../src/ui/read-timeline.ts";

/** An exchange with no images, decision, attempts, cost, status or calls, but for `members`. */
export const bareExchange = (members: Partial<TimelineExchange> = {}): TimelineExchange => ({
  id: "ex_0001",
  protocol: "responses",
  path: "/e/1/v1/responses",
  stages: [],
  clientImages: [],
  upstreamImages: [],
  decision: undefined,
  imageStats: undefined,
  attempts: [],
  usage: undefined,
  cost: undefined,
  upstream: { queueMs: 0, throttled: 0, retries: 0 },
  cancelled: undefined,
  status: undefined,
  calls: [],
  ...members,
});

/** The HTML of a finished episode's page holding one exchange; `cost` is the episode status's. */
export function renderTimeline(x: TimelineExchange, cost?: unknown): string {
  const timeline: Timeline = { exchanges: [x], refusals: [], otherLedger: [], auxiliary: [], stamp: 0 };
  return String(
    TimelinePage({
      episode: { id: "1", state: "finished", ...(cost !== undefined ? { cost } : {}) },
      timeline,
      page: 1,
      pages: 1,
      exchanges: [x],
    }),
  );
}
