/**
 * The Gemini error envelope `{error:{code,message,status}}` with Google's
 * canonical status names. The HTTP status comes from the error kind, so every
 * error that retrying cannot fix is a 400 (Gemini CLI retries 5xx and 429).
 * Spec: https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
 */
import type { ErrorKind, SidecarError } from "../../lib/errors.ts";

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

export function renderGeminiError(error: SidecarError): Response {
  return Response.json(geminiErrorBody(error), { status: error.status });
}
