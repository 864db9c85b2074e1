/**
 * Time and concurrency limits on the connections of the binary's server. Bun.serve
 * offers an idle timeout per connection and `server.timeout(request, seconds)` per
 * request; these middlewares use both so that each phase of a request has the
 * bound that fits it (docs/server-limits.md):
 *   - headers: the runtime closes a connection whose request head is not complete
 *     within about 10 s (fixed by Bun, not configurable);
 *   - body: `server.body_timeout_seconds` from the end of the head to the last body
 *     byte, a deadline that bytes trickling in do not extend; over it the client
 *     gets a final error in its route's envelope and the connection is closed. Each
 *     route group's body receiver (src/body/receive-bodies.ts) holds the body to it
 *     and to `body_limit_bytes`, chunked or sized; that limit holds in app.request()
 *     too, where no timer runs;
 *   - working: no timer. Waiting on the upstream (bounded by its own timeout and
 *     retries) or on the robot (an MCP tool call) is never cut;
 *   - answering and between requests: `server.idle_timeout_seconds` without a byte
 *     written, and for an idle kept-alive connection (Bun counts in 4 s steps).
 * `server.max_requests_in_flight` bounds the requests being received, worked on or
 * answered at once (each holds a connection); beyond it a request is refused with
 * a retryable 503 in its route's envelope before its body is read.
 */
import type { MiddlewareHandler } from "hono";
import { SidecarError } from "../lib/errors.ts";
import type { Logger } from "../lib/logger.ts";
import { servingServer } from "../lib/serving-server.ts";

export type ServerLimits = {
  body_timeout_seconds: number;
  idle_timeout_seconds: number;
  max_requests_in_flight: number;
};

export type RequestLimitsDeps = {
  limits: ServerLimits;
  logger: Logger;
  /** The refusal in the envelope of the request's route, recorded where the route can record it. */
  refuse: (
    request: Request,
    error: SidecarError,
    entry: { operation: string } & Record<string, unknown>,
  ) => Response;
  clock: () => number;
};

/** Bun closes the connection this long after our own body deadline, should our answer not get out. */
const backstopSeconds = 8;

/** Probes answer even at the limit: a busy sidecar is not a dead one. */
const exempt = (path: string) => path === "/health" || path.startsWith("/health/");

/**
 * First middleware: refuses a request over the in-flight limit, and arms the
 * runtime's backstop for the body deadline (Bun counts this request in
 * pendingRequests already).
 */
export function admitRequests(deps: RequestLimitsDeps): MiddlewareHandler {
  const { limits } = deps;
  return async (c, next) => {
    const server = servingServer(c);
    if (!server) return next();
    const request = c.req.raw;
    if (!exempt(c.req.path) && server.pendingRequests > limits.max_requests_in_flight) {
      deps.logger.warn("request refused: too many requests in flight", {
        method: request.method,
        path: c.req.path,
        limit: limits.max_requests_in_flight,
      });
      const refusal = deps.refuse(
        request,
        new SidecarError(
          "unavailable",
          `the sidecar has ${limits.max_requests_in_flight} requests in flight (server.max_requests_in_flight); retry shortly`,
        ),
        { operation: "request_limit", limit: limits.max_requests_in_flight },
      );
      refusal.headers.set("retry-after", "1");
      return refusal;
    }
    server.timeout(request, limits.body_timeout_seconds + backstopSeconds);
    return next();
  };
}

/**
 * Around every route, when Bun serves the app: once the answer is ready, the idle
 * timeout is set again (the route group's body receiver lifted the body's backstop
 * while the route worked, src/body/receive-bodies.ts). An answer streamed with pauses
 * (MCP: the result of a robot call comes when the robot is done) keeps no timer and
 * closes its connection when it ends instead: the timer can only be set again before
 * the stream closes, and a pass-through stream to do so delayed the last bytes enough
 * that a shutdown closing the connections cut them.
 */
export function answerTimers(
  limits: ServerLimits,
  pausingAnswer: (path: string, answer: Response) => boolean,
): MiddlewareHandler {
  return async (c, next) => {
    const server = servingServer(c);
    if (!server) return next();
    const original = c.req.raw;
    await next();
    if (c.res.body && pausingAnswer(c.req.path, c.res)) {
      c.res.headers.set("connection", "close");
    } else {
      server.timeout(original, limits.idle_timeout_seconds);
    }
  };
}
