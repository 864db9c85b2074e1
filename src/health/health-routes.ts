/**
 * Health endpoints for people and container probes:
 *   GET /health        status, version, demo flag (503 while shutting down) — kept as it always answered
 *   GET /health/live   the process answers (liveness: restart only when this fails)
 *   GET /health/ready  codecs warmed, data directory writable, not draining; 503 with the reasons otherwise
 * No authentication: probes carry no credentials, and nothing here describes an episode.
 */
import { Hono } from "hono";
import { notReadyReasons, type ReadinessCheck } from "./readiness.ts";

export type HealthDeps = {
  version: string;
  demoUpstream: boolean;
  isShuttingDown: () => boolean;
  readiness: readonly ReadinessCheck[];
};

export function createHealthRoutes(deps: HealthDeps): Hono {
  const app = new Hono();
  app.get("/", (c) =>
    c.json(
      {
        status: deps.isShuttingDown() ? "shutting_down" : "ok",
        version: deps.version,
        demo_upstream: deps.demoUpstream,
      },
      deps.isShuttingDown() ? 503 : 200,
    ),
  );
  app.get("/live", (c) => c.json({ status: "live" }));
  app.get("/ready", async (c) => {
    c.header("cache-control", "no-store");
    const reasons = await notReadyReasons(deps.readiness);
    return reasons.length === 0 ? c.json({ status: "ready" }) : c.json({ status: "not_ready", reasons }, 503);
  });
  return app;
}
