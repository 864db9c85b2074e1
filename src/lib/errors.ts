/**
 * The one error type that crosses module boundaries. Each ingress renders it in
 * its own protocol envelope; the kind decides the HTTP status. All four real
 * clients treat 400 as final and retry 5xx/429/529 for minutes, so a kind that
 * retrying cannot fix must map to 400.
 */
import { errorMessage } from "./error-message.ts";

export type ErrorKind =
  /** Malformed or unsupported request; retrying cannot help. */
  | "invalid_request"
  /** Missing or wrong credential. */
  | "authentication"
  /** Known route, unknown object (episode id, session). */
  | "not_found"
  /** The object is no longer in the state the request needs (a call already decided, other arguments). */
  | "conflict"
  /** Body or image over a configured limit; final. */
  | "request_too_large"
  /** The episode is closed for model work (provider_error, cancelled, finished, turn cap). */
  | "episode_closed"
  /** Upstream failed in a way a later attempt may not (429/5xx/timeout/reset) and our retries are spent. */
  | "upstream_transient"
  /** Upstream answered something we must not deliver (truncated, invalid arguments, undeclared tool). */
  | "upstream_invalid"
  /** Upstream refused the request itself (a 4xx other than 429): retrying cannot help. */
  | "upstream_rejected"
  /** The sidecar cannot serve this now (shutting down, the robot's executor or its body hashing worker failing); a retry may succeed. */
  | "unavailable"
  /** A bug: never expected. */
  | "internal";

const statusByKind: Record<ErrorKind, number> = {
  invalid_request: 400,
  authentication: 401,
  not_found: 404,
  conflict: 409,
  request_too_large: 400,
  episode_closed: 400,
  upstream_transient: 503,
  upstream_invalid: 502,
  upstream_rejected: 400,
  unavailable: 503,
  internal: 500,
};

/** A message may quote the client's input (ids, names, values), never carry it whole. */
const maxMessageChars = 1000;

export class SidecarError extends Error {
  readonly kind: ErrorKind;
  /** The request field at fault, when there is one (wire spelling, dotted path). */
  readonly param: string | undefined;
  /** The failure ends the episode's model work (it goes to provider_error), e.g. an unsupported operation. */
  readonly episodeFatal: boolean;
  /** A protocol's own error code, where it defines one (e.g. Responses `previous_response_not_found`). */
  readonly code: string | undefined;

  constructor(
    kind: ErrorKind,
    message: string,
    options: { param?: string; cause?: unknown; episodeFatal?: boolean; code?: string } = {},
  ) {
    const kept =
      message.length > maxMessageChars
        ? `${message.slice(0, maxMessageChars)}… (${message.length} characters)`
        : message;
    super(kept, { cause: options.cause });
    this.name = "SidecarError";
    this.kind = kind;
    this.param = options.param;
    this.episodeFatal = options.episodeFatal ?? false;
    this.code = options.code;
  }

  get status(): number {
    return statusByKind[this.kind];
  }

  /** Whether a client retry could succeed (decides 4xx vs 5xx in every envelope). */
  get retryable(): boolean {
    return this.status >= 500 && this.kind !== "internal";
  }
}

/** Any thrown value as a SidecarError (unknown errors become `internal`). */
export function toSidecarError(error: unknown): SidecarError {
  if (error instanceof SidecarError) return error;
  const message = errorMessage(error);
  return new SidecarError("internal", `internal error: ${message}`, { cause: error });
}

/**
 * The sidecar's own error answer, `{error:{type,message}}`, where no client protocol's
 * envelope applies: the control API's authentication, /ui, /metrics, an unknown route,
 * a refusal before a route that is no model route. `status`: the error's own by default.
 */
export function sidecarErrorResponse(error: SidecarError, status = error.status): Response {
  return Response.json({ error: { type: error.kind, message: error.message } }, { status });
}

/** Shorthand for the most common error: a field the client sent that we cannot honour. */
export function invalidField(param: string, message: string): SidecarError {
  return new SidecarError("invalid_request", `${param}: ${message}`, { param });
}
