import { describe, expect, test } from "bun:test";
import { createLogger } from "../lib/logger.ts";
import { createShutdown } from "./shutdown.ts";

function harness() {
  const steps: string[] = [];
  const lines: string[] = [];
  const lifecycle = createShutdown({
    episodes: { stopAccepting: () => steps.push("stop accepting"), list: () => [] },
    logger: createLogger({ level: "info", redact: (text) => text, write: (line) => lines.push(line) }),
    clock: Date.now,
    drainDeadlineMs: 1_000,
    cancelUpstream: (reason) => steps.push(`cancel upstream: ${reason.message}`),
    stopShipping: () => steps.push("stop shipping"),
    stopServer: () => steps.push("stop server"),
    closeConverter: async () => {
      steps.push("close converter");
    },
    flushTraces: async () => {
      steps.push("flush traces");
    },
  });
  return { lifecycle, steps, lines };
}

describe("createShutdown", () => {
  test("refuses new work first, lets go of the socket only after the drain, and exits 0 when all drained", async () => {
    const { lifecycle, steps, lines } = harness();
    expect(lifecycle.shuttingDown).toBe(false);
    const code = lifecycle.shutdown("SIGTERM");
    // Readiness reads this while the drain is under way.
    expect(lifecycle.shuttingDown).toBe(true);
    expect(await code).toBe(0);
    expect(await lifecycle.closed).toBe(0);
    expect(steps).toEqual([
      "stop accepting",
      "cancel upstream: shutdown: SIGTERM",
      "stop shipping",
      "stop server",
      "close converter",
      "flush traces",
    ]);
    expect(lines.join("\n")).toContain("shutdown complete");
  });

  test("a second shutdown waits for the first instead of running the steps again", async () => {
    const { lifecycle, steps } = harness();
    const [first, second] = await Promise.all([lifecycle.shutdown("SIGTERM"), lifecycle.shutdown("SIGINT")]);
    expect([first, second]).toEqual([0, 0]);
    expect(steps.filter((step) => step === "stop accepting")).toHaveLength(1);
  });

  test("a trace exporter that fails is a warning, not a failed shutdown", async () => {
    const lines: string[] = [];
    const lifecycle = createShutdown({
      episodes: { stopAccepting: () => {}, list: () => [] },
      logger: createLogger({ level: "info", redact: (text) => text, write: (line) => lines.push(line) }),
      clock: Date.now,
      drainDeadlineMs: 1_000,
      cancelUpstream: () => {},
      flushTraces: () => Promise.reject(new Error("collector gone")),
    });
    expect(await lifecycle.shutdown("SIGTERM")).toBe(0);
    expect(lines.join("\n")).toContain("traces could not be exported at shutdown");
  });
});
