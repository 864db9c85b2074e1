/**
 * createApp(deps): every route of the sidecar, no globals — tests drive it with
 * app.request() and the binary serves it with Bun.serve.
 *   GET  /health, /health/live, /health/ready   (container probes)
 *   GET  /metrics                       Prometheus metrics (control password)
 *   /control/*                          control API (control password)
 *   /ui                                 episode timeline pages (control password, cookie)
 *   /e/{episode}/v1/responses           OpenAI Responses (OpenCode, Codex)
 *   /e/{episode}/gemini/v1beta/models/… Gemini GenerateContent (Gemini CLI)
 *   /e/{episode}/anthropic/v1/messages  Anthropic Messages (Claude Code)
 *   /e/{episode}/mcp                    the episode's `ura` MCP server
 */
import { Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { type ControlDeps, createControlRoutes } from "./control/control-routes.ts";
import { createHealthRoutes } from "./health/health-routes.ts";
import { notDrainingCheck, type ReadinessCheck } from "./health/readiness.ts";
import { refuseOversizedBody } from "./ingress/refuse-oversized-body.ts";
import { SidecarError } from "./lib/errors.ts";
import type { MemoryReclaimer } from "./lib/reclaim-memory.ts";
import type { Metrics } from "./observe/metrics.ts";
import { createMetricsRoute } from "./observe/metrics-route.ts";
import type { RouteDeps } from "./server/route-deps.ts";
import { createUiRoutes, type UiDeps } from "./ui/ui-routes.tsx";

export type AppDeps = RouteDeps & {
  control: ControlDeps;
  version: string;
  demoUpstream: boolean;
  bodyLimitBytes: number;
  /** True once shutdown began: new exchanges are refused (and /health/ready answers 503). */
  isShuttingDown: () => boolean;
  /** Readiness checks besides not draining (codecs warmed, data directory writable), from the composition root. */
  readiness?: readonly ReadinessCheck[];
  /** Served at GET /metrics behind the control password; no route when absent. */
  metrics?: Metrics;
  /** One span per request to an episode or the control API, when tracing is configured. */
  tracing?: { middleware: MiddlewareHandler };
  /** The timeline pages at /ui (login with the control password); no route when absent. */
  ui?: Omit<UiDeps, "controlPassword">;
  /** Told the body size of every answered request (large ones free their memory early). */
  memory?: MemoryReclaimer;
  /** Extra route groups mounted under /e/:episode (ingresses, MCP), each from its own module. */
  episodeRoutes: ((deps: RouteDeps) => Hono)[];
};

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  let requestSeq = 0;
  app.use("*", async (c, next) => {
    requestSeq += 1;
    const requestId = c.req.header("x-request-id") ?? `req_${requestSeq}`;
    const started = deps.clock();
    deps.memory?.requestStarted();
    try {
      await next();
    } finally {
      deps.memory?.requestEnded(Number(c.req.header("content-length") ?? 0));
    }
    c.header("x-request-id", requestId);
    deps.logger.debug("request", {
      request_id: requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      ms: deps.clock() - started,
    });
  });
  if (deps.tracing) {
    app.use("/e/*", deps.tracing.middleware);
    app.use("/control/*", deps.tracing.middleware);
  }
  app.use(
    "*",
    bodyLimit({
      maxSize: deps.bodyLimitBytes,
      // A model request is refused in its own protocol's envelope (and recorded);
      // control and MCP keep the generic 413.
      onError: (c) =>
        refuseOversizedBody(deps, c.req.raw, deps.bodyLimitBytes) ??
        c.json(
          {
            error: {
              type: "request_too_large",
              message: `request body over the limit of ${deps.bodyLimitBytes} bytes (body_limit_bytes)`,
            },
          },
          413,
        ),
    }),
  );
  app.route(
    "/health",
    createHealthRoutes({
      version: deps.version,
      demoUpstream: deps.demoUpstream,
      isShuttingDown: deps.isShuttingDown,
      readiness: [notDrainingCheck(deps.isShuttingDown), ...(deps.readiness ?? [])],
    }),
  );
  if (deps.metrics) app.route("/metrics", createMetricsRoute(deps.metrics, deps.control.controlPassword));
  app.route("/control", createControlRoutes(deps.control));
  if (deps.ui)
    app.route("/ui", createUiRoutes({ ...deps.ui, controlPassword: deps.control.controlPassword }));
  for (const routes of deps.episodeRoutes) app.route("/e/:episode", routes(deps));
  app.notFound((c) =>
    c.json({ error: { type: "not_found", message: `no route ${c.req.method} ${c.req.path}` } }, 404),
  );
  app.onError((err, c) => {
    const error =
      err instanceof SidecarError ? err : new SidecarError("internal", `internal error: ${err.message}`);
    if (error.kind === "internal")
      deps.logger.error("unhandled error", { message: err.message, stack: err.stack });
    return c.json({ error: { type: error.kind, message: error.message } }, error.status as 400);
  });
  return app;
}
