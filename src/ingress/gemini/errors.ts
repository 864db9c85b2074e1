/**
 * The Gemini error envelope `{error:{code,message,status}}` with Google's
 * canonical status names. The HTTP status comes from the error kind, so every
 * error that retrying cannot fix is a 400 (Gemini CLI retries 5xx and 429).
 * Spec: https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
 */
import { type ErrorKind, SidecarError } from "../../lib/errors.ts";

export function geminiStatus(kind: ErrorKind): string {
  switch (kind) {
    case "invalid_request":
    case "request_too_large":
    case "upstream_rejected":
      return "INVALID_ARGUMENT";
    case "authentication":
      return "UNAUTHENTICATED";
    case "not_found":
      return "NOT_FOUND";
    case "episode_closed":
    case "conflict":
      return "FAILED_PRECONDITION";
    case "upstream_transient":
    case "unavailable":
      return "UNAVAILABLE";
    case "upstream_invalid":
    case "internal":
      return "INTERNAL";
    default: {
      const never: never = kind;
      throw new Error(`unknown error kind ${never}`);
    }
  }
}

export function geminiErrorBody(error: SidecarError) {
  return { error: { code: error.status, message: error.message, status: geminiStatus(error.kind) } };
}

/**
 * The client is also told what an episode-ending refusal did (the records keep the
 * plain reason): Gemini CLI shows the message, and its user must know the episode
 * is over rather than retry.
 */
export function renderError(error: SidecarError): Response {
  const told = error.episodeFatal
    ? new SidecarError(
        error.kind,
        `${error.message}. The episode is now in provider_error; no upstream request was made.`,
      )
    : error;
  return Response.json(geminiErrorBody(told), { status: error.status });
}
