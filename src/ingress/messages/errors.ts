/**
 * SidecarError → Anthropic error response `{type:"error",error:{type,message}}`.
 * Spec: https://docs.anthropic.com/en/api/errors
 *
 * Status decides whether Claude Code retries: 400/401/404 are final; 429, 5xx and
 * 529 are retried with backoff for minutes. So only what a retry could fix is
 * 5xx: shutdown is 529 `overloaded_error`, a bug 500 `api_error`. An upstream
 * failure never reaches the client as 5xx: it has put the episode in
 * `provider_error` (run-exchange), so it is answered at once as a final 400
 * `invalid_request_error` naming the fault and the episode's end. The 529/500
 * rows for the upstream kinds stay for completeness of the mapping.
 */
import type { ErrorKind, SidecarError } from "../../lib/errors.ts";

export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "not_found_error"
  | "api_error"
  | "overloaded_error";

export function toAnthropicError(kind: ErrorKind): { status: number; type: AnthropicErrorType } {
  switch (kind) {
    case "invalid_request":
    case "request_too_large":
    case "episode_closed":
    case "upstream_rejected":
    case "conflict":
      return { status: 400, type: "invalid_request_error" };
    case "authentication":
      return { status: 401, type: "authentication_error" };
    case "not_found":
      return { status: 404, type: "not_found_error" };
    case "upstream_transient":
    case "unavailable":
      return { status: 529, type: "overloaded_error" };
    case "upstream_invalid":
    case "internal":
      return { status: 500, type: "api_error" };
    default: {
      const never: never = kind;
      throw new Error(`unknown error kind ${String(never)}`);
    }
  }
}

export function renderError(error: SidecarError): Response {
  const { status, type } = toAnthropicError(error.kind);
  return Response.json({ type: "error", error: { type, message: error.message } }, { status });
}
