/**
 * A route group's body receiver: the middleware that receives a request's whole
 * body before the group's routes run (they then read it from memory), held to
 * body_limit_bytes while it arrives (receive-body.ts) and, when Bun serves the
 * app, to the body deadline (`server.body_timeout_seconds`). Each route group gets
 * one in the form it takes bodies in (body-variables.ts), and the body goes on in
 * the request's context. Once the body is in, the runtime's backstop timer is
 * lifted while the route works (src/server/request-timeouts.ts sets the idle
 * timeout again when the answer is ready). A model request's body of a megabyte or
 * more then waits its turn under body_bytes_in_flight (body-admission.ts).
 */
import type { Context, MiddlewareHandler, Next } from "hono";
import { SidecarError } from "../lib/errors.ts";
import type { KnownTexts, TextHold } from "../lib/known-texts.ts";
import type { Logger } from "../lib/logger.ts";
import { servingServer } from "../lib/serving-server.ts";
import type { BodyAdmission } from "./body-admission.ts";
import type { BodyEnv, BodyForm } from "./body-variables.ts";
import { declaredBodyLength } from "./read-body-chunks.ts";
import { receiveBody } from "./receive-body.ts";

export type BodyReceiverDeps = {
  /** body_limit_bytes: the largest body of any request, served or driven with app.request(). */
  bodyLimitBytes: number;
  /** The body deadline; it acts only when Bun.serve serves the app. */
  limits?: { body_timeout_seconds: number };
  logger: Logger;
  clock: () => number;
  /** The refusal in the envelope of the request's route, recorded where the route can record it. */
  refuse: (
    request: Request,
    error: SidecarError,
    entry: { operation: string } & Record<string, unknown>,
  ) => Response;
  /** The answer to a body over body_limit_bytes, in the envelope of its route (the one for model routes is recorded). */
  refuseOversized: (request: Request) => Response;
  /**
   * Told the size of each body before the route works on it (the memory reclaimer's
   * bodyArriving): a declared one before it is read, a chunked one once it has arrived.
   */
  bodyArriving?: (bodyBytes: number) => void;
  /** Told the bytes of each piece of a body as it arrives (the memory reclaimer's bodyReceived). */
  bodyReceived?: (bytes: number) => void;
  /** Bounds the bytes of large model request bodies processed at once (body_bytes_in_flight). */
  admission?: BodyAdmission;
  /** The process's facts of long strings: a split body's are registered while it is processed. */
  knownTexts?: KnownTexts;
};

/** Model request bodies from this size on are admitted under body_bytes_in_flight. */
const admittedFromBytes = 1024 * 1024;

export function receiveBodies(deps: BodyReceiverDeps, form: BodyForm): MiddlewareHandler<BodyEnv> {
  return async (c, next) => {
    // The facts of the body's long strings are registered while the route works (known-texts.ts);
    // an exchange that outlives the route holds them on until it is done.
    let hold: TextHold | undefined;
    try {
      return await receiveThenRun(c, next, (held) => {
        hold = held;
      });
    } finally {
      hold?.release();
    }
  };

  async function receiveThenRun(
    c: Context<BodyEnv>,
    next: Next,
    held: (hold: TextHold | undefined) => void,
  ): Promise<Response | undefined> {
    const server = servingServer(c);
    const limits = server && deps.limits;
    const original = c.req.raw;
    if (original.body) {
      // A collection owed from the last large request best runs before the next body arrives on
      // top of its memory, so a declared size is told first. A chunked body's size is known only
      // once it has arrived; told then, the collection still runs before the route makes its
      // copies of the body, and a chunked body is never taken for a small one.
      const declared = declaredBodyLength(original);
      if (declared !== undefined) deps.bodyArriving?.(declared);
      const started = deps.clock();
      const received = await receiveBody(original, {
        split: form === "split",
        ...(deps.knownTexts ? { knownTexts: deps.knownTexts } : {}),
        limitBytes: deps.bodyLimitBytes,
        ...(limits ? { deadlineMs: limits.body_timeout_seconds * 1000 } : {}),
        ...(deps.bodyReceived ? { onBytes: deps.bodyReceived } : {}),
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
      if (received.kind === "failed") {
        deps.logger.warn("request body could not be processed", {
          method: original.method,
          path: c.req.path,
          reason: received.error.message,
        });
        return deps.refuse(original, received.error, {
          operation: "body_failed",
          reason: received.error.message,
        });
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
      c.set("bodyBytes", received.bytes);
      if (declared === undefined) deps.bodyArriving?.(received.bytes);
      if (received.split) {
        held(received.split.hold);
        c.set("splitBody", received.split);
      } else {
        // Held once, as the text routes read: hono's readers answer from this cache, and only a
        // route that reads the raw request (the MCP transport) gets a copy to read from.
        // (hono keeps the promise of each reader's result there, though its type names the value)
        (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(received.text);
        if (form === "raw") c.req.raw = new Request(original, { body: received.text });
      }
    }
    if (server && limits) server.timeout(original, 0);
    const bytes = c.get("bodyBytes") ?? 0;
    // Tool callbacks (MCP) and small model requests never queue behind camera histories. After
    // the body is received (its deadline would otherwise run while it waits): a waiting
    // request holds its text, not the copies processing makes.
    if (!deps.admission || form !== "split" || c.req.method !== "POST" || bytes < admittedFromBytes) {
      await next();
      return undefined;
    }
    const release = await deps.admission.admit(bytes);
    try {
      await next();
    } finally {
      release();
    }
    return undefined;
  }
}

function closingConnection(refusal: Response): Response {
  refusal.headers.set("connection", "close");
  return refusal;
}
