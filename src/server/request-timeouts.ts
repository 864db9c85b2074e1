/**
 * Time and concurrency limits on the connections of the binary's server. Bun.serve
 * offers an idle timeout per connection and `server.timeout(request, seconds)` per
 * request; these middlewares use both so that each phase of a request has the
 * bound that fits it (docs/server-limits.md):
 *   - headers: the runtime closes a connection whose request head is not complete
 *     within about 10 s (fixed by Bun, not configurable);
 *   - body: `server.body_timeout_seconds` from the end of the head to the last body
 *     byte, a deadline that bytes trickling in do not extend; over it the client
 *     gets a final error in its route's envelope and the connection is closed. The
 *     same reader holds the body to `body_limit_bytes` (src/body/receive-body.ts), chunked or
 *     sized, and that limit holds in app.request() too, where no timer runs;
 *   - working: no timer. Waiting on the upstream (bounded by its own timeout and
 *     retries) or on the robot (an MCP tool call) is never cut;
 *   - answering and between requests: `server.idle_timeout_seconds` without a byte
 *     written, and for an idle kept-alive connection (Bun counts in 4 s steps).
 * `server.max_requests_in_flight` bounds the requests being received, worked on or
 * answered at once (each holds a connection); beyond it a request is refused with
 * a retryable 503 in its route's envelope before its body is read.
 */
import type { Context, MiddlewareHandler } from "hono";
import { declaredBodyLength } from "../body/read-body-chunks.ts";
import { receiveBody, receivedBodyBytes } from "../body/receive-body.ts";
import { handOverBody } from "../body/received-body.ts";
import { SidecarError } from "../lib/errors.ts";
import type { Logger } from "../lib/logger.ts";

export type ServerLimits = {
  body_timeout_seconds: number;
  idle_timeout_seconds: number;
  max_requests_in_flight: number;
};

/** The part of Bun's server the limits use (absent when a test drives the app with app.request()). */
type ServingServer = {
  readonly pendingRequests: number;
  timeout(request: Request, seconds: number): void;
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

function servingServer(c: Context): ServingServer | undefined {
  const server = (c.env as { server?: ServingServer } | undefined)?.server;
  return server && typeof server.timeout === "function" ? server : undefined;
}

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

export type BodyReceiverDeps = Omit<RequestLimitsDeps, "limits"> & {
  /** body_limit_bytes: the largest body of any request, served or driven with app.request(). */
  bodyLimitBytes: number;
  /** The body deadline and idle timeout; they act only when Bun.serve serves the app. */
  limits?: ServerLimits;
  /** The answer to a body over body_limit_bytes, in the envelope of its route (the one for model routes is recorded). */
  refuseOversized: (request: Request) => Response;
};

/**
 * Receives the whole body before any route runs (routes then read it from memory),
 * held to body_limit_bytes while it arrives (src/body/receive-body.ts); when Bun serves the
 * app, also within the body deadline, the timer lifted while the route works and
 * the idle timeout set again once the answer is ready. An answer streamed with
 * pauses (MCP: the result of a robot call comes when the robot is done) keeps no
 * timer and closes its connection when it ends instead: the timer can only be set
 * again before the stream closes, and a pass-through stream to do so delayed the
 * last bytes enough that a shutdown closing the connections cut them.
 */
export function receiveBodies(
  deps: BodyReceiverDeps,
  options: {
    pausingAnswer: (path: string, answer: Response) => boolean;
    /** Whether the route reads the body from the raw Request rather than through hono. */
    readsRawBody: (path: string) => boolean;
    /**
     * Whether the route takes its body split (src/body/received-body.ts): a model
     * route, whose camera history is then never one buffer or one string.
     */
    splitsBody: (path: string) => boolean;
    /**
     * Told the size of each body before the route works on it (the memory reclaimer's
     * bodyArriving): a declared one before it is read, a chunked one once it has arrived.
     */
    bodyArriving?: (bodyBytes: number) => void;
  },
): MiddlewareHandler {
  return async (c, next) => {
    const server = servingServer(c);
    const limits = server && deps.limits;
    const original = c.req.raw;
    if (original.body) {
      // A collection owed from the last large request best runs before the next body arrives on
      // top of its memory, so a declared size is told first. A chunked body's size is known only
      // once it has arrived; told then, the collection still runs before the route makes its
      // copies of the body, and a chunked body is never taken for a small one.
      const declared = declaredBodyLength(original);
      if (declared !== undefined) options.bodyArriving?.(declared);
      const started = deps.clock();
      const received = await receiveBody(original, {
        split: options.splitsBody(c.req.path),
        limitBytes: deps.bodyLimitBytes,
        ...(limits ? { deadlineMs: limits.body_timeout_seconds * 1000 } : {}),
      });
      if (received.kind === "over_limit") {
        deps.logger.warn("request body over the limit", {
          method: original.method,
          path: c.req.path,
          limit_bytes: deps.bodyLimitBytes,
          content_length: original.headers.get("content-length"),
        });
        // The rest of the body is not read: the connection cannot carry another request.
        return closingConnection(deps.refuseOversized(original));
      }
      if (received.kind !== "complete") {
        const waited = deps.clock() - started;
        const reason =
          received.kind === "timeout"
            ? `the request body did not arrive in full within ${limits?.body_timeout_seconds} s (server.body_timeout_seconds)`
            : "the client closed the connection before sending its whole request body";
        deps.logger.warn("request body not received", {
          method: original.method,
          path: c.req.path,
          reason,
          ms: waited,
        });
        const refusal = deps.refuse(
          original,
          new SidecarError("invalid_request", reason, { param: "body" }),
          {
            operation: "body_timeout",
            reason,
            waited_ms: waited,
          },
        );
        return closingConnection(refusal);
      }
      if (declared === undefined) options.bodyArriving?.(receivedBodyBytes(original));
      if (received.split) {
        handOverBody(original, received.split);
      } else {
        // Held once, as the text routes read: hono's readers answer from this cache, and only a
        // route that reads the raw request (the MCP transport) gets a copy to read from.
        // (hono keeps the promise of each reader's result there, though its type names the value)
        (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(received.text);
        if (options.readsRawBody(c.req.path)) c.req.raw = new Request(original, { body: received.text });
      }
    }
    if (!server || !limits) return next();
    server.timeout(original, 0);
    await next();
    const body = c.res.body;
    if (body && options.pausingAnswer(c.req.path, c.res)) {
      c.res.headers.set("connection", "close");
    } else {
      server.timeout(original, limits.idle_timeout_seconds);
    }
  };
}

function closingConnection(refusal: Response): Response {
  refusal.headers.set("connection", "close");
  return refusal;
}
