/**
 * SidecarError → Anthropic error response `{type:"error",error:{type,message}}`.
 * Spec: https://docs.anthropic.com/en/api/errors
 *
 * Status decides whether Claude Code retries: 400/401/404 are final; 429, 5xx and
 * 529 are retried with backoff for minutes. So only what a retry could fix is
 * 5xx: transient upstream trouble and shutdown are 529 `overloaded_error`,
 * undeliverable upstream output is 500 `api_error`. Any upstream failure has
 * already put the episode in `provider_error` (run-exchange), so that retry is
 * answered with a final 400 `invalid_request_error` naming the provider failure —
 * one extra request, and the user sees why. An upstream that refused the request
 * itself (`upstream_rejected`) and a closed episode are 400 straight away.
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
