/**
 * SidecarError → the OpenAI error envelope `{error:{message,type,param,code}}`
 * (https://platform.openai.com/docs/guides/error-codes). The status comes from the
 * error kind: 400 for what retrying cannot fix (both OpenCode and Codex treat it as
 * final), 5xx for what a later attempt may fix. The answer is buffered, so an error
 * is always known before the first byte: it is never a mid-stream event.
 *
 * OpenCode 1.18.33 also retries (5 times, ~1 minute of backoff) any API error whose
 * message or body matches its transient-error patterns, whatever the status: "503",
 * "500" (also inside a byte count or a random episode id), "rate limit", "server
 * error", "fetch failed", … A final 400 saying "upstream answered HTTP 503" was
 * retried. So the text of a final error is written with a zero-width space inside
 * each such match: it reads the same, it no longer matches. The records keep the
 * exact message.
 */
import type { ErrorKind, SidecarError } from "../../lib/errors.ts";

export type OpenAiErrorBody = {
  error: { message: string; type: string; param: string | null; code: string };
};

function errorType(kind: ErrorKind): string {
  switch (kind) {
    case "invalid_request":
    case "request_too_large":
    case "episode_closed":
    case "upstream_rejected":
    case "not_found":
    case "conflict":
      return "invalid_request_error";
    case "authentication":
      return "authentication_error";
    case "upstream_transient":
    case "upstream_invalid":
    case "unavailable":
    case "internal":
      return "server_error";
    default: {
      const never: never = kind;
      throw new Error(`unknown error kind ${String(never)}`);
    }
  }
}

/** OpenCode's transient-error patterns (its session retry), as of opencode-ai 1.18.33. */
export const clientRetryPatterns: RegExp[] = [
  /429|500|502|503|504|524/gi,
  /rate increased too quickly|rate limit|rate-limit|rate_limit|too many requests/gi,
  /overloaded|service unavailable|service_unavailable|service-unavailable|internal error|internal_error|internal server error|server error|server_error|server-error|provider returned error|provider_returned_error|provider-returned-error/gi,
  /terminated|fetch failed|failed to fetch|network[-_\s]error|upstream connect|connection error|connection refused|connection lost|socket connection was closed|socket hang up|reset before headers|getaddrinfo|enotfound|eai_again|econnrefused|econnreset|etimedout/gi,
  /^timeout$|\b(?:request|response|connection|network|stream|read) (?:timeout|timed out|time out)\b/gi,
  /try your request again|retry your request|resource exhausted|resource_exhausted/gi,
  /\btry again (?:later|in\b)|\b(?:currently|temporarily) at capacity\b/gi,
  /exhausted|unavailable|too_many_requests/gi,
];

const zeroWidthSpace = "\u200b";

/** The same text, with no match of a client's transient-error patterns left in it. */
export function withoutRetryHints(text: string): string {
  let out = text;
  for (const pattern of clientRetryPatterns) {
    out = out.replace(pattern, (match) => `${match.slice(0, 1)}${zeroWidthSpace}${match.slice(1)}`);
  }
  return out;
}

export function toOpenAiError(error: SidecarError): OpenAiErrorBody {
  const text = (value: string) => (error.retryable ? value : withoutRetryHints(value));
  return {
    error: {
      message: text(error.message),
      type: errorType(error.kind),
      param: error.param === undefined ? null : text(error.param),
      code: error.code ?? error.kind,
    },
  };
}

export function renderError(error: SidecarError): Response {
  return Response.json(toOpenAiError(error), { status: error.status });
}
