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
import type { BodyAdmission } from "../body/body-admission.ts";
import type { BodyEnv, BodyForm } from "../body/body-variables.ts";
import { receivedBodyBytes } from "../body/body-variables.ts";
import { receiveBodies } from "../body/receive-bodies.ts";
import type { MemoryReclaimer } from "../body/reclaim-memory.ts";
import { type ControlDeps, createControlRoutes } from "../control/control-routes.ts";
import { createHealthRoutes } from "../health/health-routes.ts";
import { notDrainingCheck, type ReadinessCheck } from "../health/readiness.ts";
import { ingressProtocolOf, refuseIngressRequest } from "../ingress/refuse-ingress-request.ts";
import { refuseOversizedBody } from "../ingress/refuse-oversized-body.ts";
import { SidecarError, sidecarErrorResponse } from "../lib/errors.ts";
import type { KnownTexts } from "../lib/known-texts.ts";
import { jsonRpcError } from "../mcp/mcp-routes.ts";
import type { Metrics } from "../observe/metrics.ts";
import { createMetricsRoute } from "../observe/metrics-route.ts";
import { createUiRoutes, type UiDeps } from "../ui/ui-routes.tsx";
import { admitRequests, answerTimers, type ServerLimits } from "./request-timeouts.ts";
import type { RouteDeps } from "./route-deps.ts";

export type AppDeps = RouteDeps & {
  control: ControlDeps;
  version: string;
  demoUpstream: boolean;
  /** body_limit_bytes, on every route group: counted while a body arrives, also with app.request() (src/body/receive-bodies.ts). */
  bodyLimitBytes: number;
  /** Connection timeouts and the in-flight limit (config `server`); they act only when Bun.serve serves the app. */
  serverLimits?: ServerLimits;
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
  /** Bounds the bytes of large model request bodies processed at once (body_bytes_in_flight). */
  admission?: BodyAdmission;
  /** The facts of long strings (a camera history's frames) known across requests (known-texts.ts). */
  knownTexts?: KnownTexts;
  /** Told the body size of every answered request (large ones free their memory early). */
  memory?: MemoryReclaimer;
  /** Extra route groups mounted under /e/:episode (ingresses, MCP), each from its own module. */
  episodeRoutes: readonly EpisodeRouteGroup[];
};

/** A route group mounted under /e/{episode}, with the paths it serves there and the form it takes bodies in. */
export type EpisodeRouteGroup = {
  /** Its paths under /e/{episode} (a hono path pattern): its body receiver acts on them alone. */
  paths: string;
  body: BodyForm;
  routes: (deps: RouteDeps) => Hono<BodyEnv>;
};

export function createApp(deps: AppDeps): Hono<BodyEnv> {
  const app = new Hono<BodyEnv>();
  let requestSeq = 0;
  app.use("*", async (c, next) => {
    requestSeq += 1;
    const requestId = c.req.header("x-request-id") ?? `req_${requestSeq}`;
    const started = deps.clock();
    try {
      await next();
    } finally {
      deps.memory?.requestEnded(receivedBodyBytes(c));
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
  const refuse = (
    request: Request,
    error: SidecarError,
    entry: { operation: string } & Record<string, unknown>,
  ) => refuseBeforeRoute(deps, request, error, entry);
  if (deps.serverLimits)
    app.use(
      "*",
      admitRequests({ limits: deps.serverLimits, logger: deps.logger, clock: deps.clock, refuse }),
    );
  if (deps.tracing) {
    app.use("/e/*", deps.tracing.middleware);
    app.use("/control/*", deps.tracing.middleware);
  }
  // A model answer is replayed in one go once the upstream exchange is buffered; any other
  // event stream (MCP) pauses while the robot works: it keeps no timer and ends its connection.
  const pausingAnswer = (path: string, answer: Response) =>
    !ingressProtocolOf(path) && (answer.headers.get("content-type") ?? "").startsWith("text/event-stream");
  if (deps.serverLimits) app.use("*", answerTimers(deps.serverLimits, pausingAnswer));
  // Each route group receives its bodies in its own form (src/body/receive-bodies.ts).
  const bodies = (form: BodyForm) =>
    receiveBodies(
      {
        bodyLimitBytes: deps.bodyLimitBytes,
        ...(deps.serverLimits ? { limits: deps.serverLimits } : {}),
        logger: deps.logger,
        clock: deps.clock,
        refuse,
        // A model request is refused in its own protocol's envelope (and recorded);
        // control and MCP keep the generic 413.
        refuseOversized: (request) =>
          refuseOversizedBody(deps, request, deps.bodyLimitBytes) ??
          sidecarErrorResponse(
            new SidecarError(
              "request_too_large",
              `request body over the limit of ${deps.bodyLimitBytes} bytes (body_limit_bytes)`,
            ),
            413,
          ),
        ...(deps.memory
          ? {
              bodyArriving: (bytes: number) => deps.memory?.bodyArriving(bytes),
              bodyReceived: (bytes: number) => deps.memory?.bodyReceived(bytes),
            }
          : {}),
        ...(deps.admission ? { admission: deps.admission } : {}),
        ...(deps.knownTexts ? { knownTexts: deps.knownTexts } : {}),
      },
      form,
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
  app.use("/control/*", bodies("text"));
  app.route("/control", createControlRoutes(deps.control));
  if (deps.ui) {
    app.use("/ui/*", bodies("text"));
    app.route("/ui", createUiRoutes({ ...deps.ui, controlPassword: deps.control.controlPassword }));
  }
  for (const group of deps.episodeRoutes) {
    app.use(`/e/:episode${group.paths}`, bodies(group.body));
    app.route("/e/:episode", group.routes(deps));
  }
  app.notFound((c) =>
    sidecarErrorResponse(new SidecarError("not_found", `no route ${c.req.method} ${c.req.path}`)),
  );
  app.onError((err) => {
    const error =
      err instanceof SidecarError ? err : new SidecarError("internal", `internal error: ${err.message}`);
    if (error.kind === "internal")
      deps.logger.error("unhandled error", { message: err.message, stack: err.stack });
    return sidecarErrorResponse(error);
  });
  return app;
}

const mcpPath = /^\/e\/[^/]+\/mcp$/;

/** A request refused before its route ran, in the envelope its route would have used. */
function refuseBeforeRoute(
  deps: RouteDeps,
  request: Request,
  error: SidecarError,
  entry: { operation: string } & Record<string, unknown>,
): Response {
  const ingress = refuseIngressRequest(deps, request, error, entry);
  if (ingress) return ingress;
  if (mcpPath.test(new URL(request.url).pathname)) return jsonRpcError(error.status, error.message);
  return sidecarErrorResponse(error);
}
