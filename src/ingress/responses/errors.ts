/**
 * SidecarError → the OpenAI error envelope `{error:{message,type,param,code}}`
 * (https://platform.openai.com/docs/guides/error-codes). The status comes from the
 * error kind: 400 for what retrying cannot fix (both OpenCode and Codex treat it as
 * final), 5xx for what a later attempt may fix. The answer is buffered, so an error
 * is always known before the first byte: it is never a mid-stream event.
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

export function toOpenAiError(error: SidecarError): OpenAiErrorBody {
  return {
    error: {
      message: error.message,
      type: errorType(error.kind),
      param: error.param ?? null,
      code: error.kind,
    },
  };
}

export function renderResponsesError(error: SidecarError): Response {
  return Response.json(toOpenAiError(error), { status: error.status });
}
