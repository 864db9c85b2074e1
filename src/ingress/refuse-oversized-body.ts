/**
 * The answer to a model request whose body is over `body_limit_bytes` (the body
 * receiver, src/body/receive-body.ts, calls this before any route runs: from a
 * declared length, or as soon as a chunked body passes the limit): a final 400
 * `request_too_large` in the client's own protocol envelope — 400 because it is
 * final for all four clients (OpenCode and Codex ship compiled binaries, so their
 * handling of 413 could not be read from source), recorded in the episode's
 * auxiliary records when the request carries its key (refuse-ingress-request.ts).
 * The body itself is never recorded (a chunked one is read up to the limit, a
 * sized one not at all). Other paths (control, MCP) get `undefined` and keep the
 * app's generic 413.
 */
import { SidecarError } from "../lib/errors.ts";
import type { IngressRouteDeps } from "./ingress-route-deps.ts";
import { refuseIngressRequest } from "./refuse-ingress-request.ts";

export function refuseOversizedBody(
  deps: IngressRouteDeps,
  request: Request,
  limitBytes: number,
): Response | undefined {
  const error = new SidecarError(
    "request_too_large",
    `request body over the limit of ${limitBytes} bytes (body_limit_bytes)`,
  );
  const declared = request.headers.get("content-length");
  return refuseIngressRequest(deps, request, error, {
    operation: "body_limit",
    reason: "body over body_limit_bytes",
    limit_bytes: limitBytes,
    content_length: declared === null ? null : Number(declared),
  });
}
