/**
 * The sidecar's metrics with nothing around them (no episodes, no MCP sessions, no
 * uncertain calls), for tests that feed the observer record events by hand and read
 * one metric back.
 */
import { createMetrics, type Metrics } from "../../src/observe/metrics.ts";

export function bareMetrics(): Metrics {
  return createMetrics({
    version: "test",
    episodeStates: () => [],
    openMcpSessions: () => 0,
    uncertainCalls: () => 0,
  });
}
