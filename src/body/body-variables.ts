/**
 * What a route group's body receiver (receive-bodies.ts) hands on to the group's
 * routes and to the app's own middleware, through hono's context variables
 * (`c.set` / `c.get`): per request, never in module-level state.
 */
import type { Context } from "hono";
import { declaredBodyLength } from "./read-body-chunks.ts";
import type { SplitText } from "./split-text.ts";

/**
 * How a route group takes a request body: `split` while it arrives (a model route,
 * whose camera history is then never one buffer or one string), `raw` from the raw
 * Request (the MCP transport), or `text` through hono's readers.
 */
export type BodyForm = "split" | "raw" | "text";

export type BodyVariables = {
  /** A model route's body, split while it arrived; taken once by receivedBody (received-body.ts). */
  splitBody: SplitText | undefined;
  /** The bytes of the body as received: what body_bytes_in_flight and the memory reclaimer count. */
  bodyBytes: number;
};

export type BodyEnv = { Variables: BodyVariables };

/**
 * The bytes of the request's body as its receiver received them; for a body none
 * received (none, refused, or a route without a receiver), its content-length.
 */
export function receivedBodyBytes(c: Context): number {
  return (c.get("bodyBytes") as number | undefined) ?? declaredBodyLength(c.req.raw) ?? 0;
}
