import { expect, test } from "bun:test";
import { type ErrorKind, SidecarError } from "../../lib/errors.ts";
import { geminiStatus, renderError } from "./errors.ts";

test("the Gemini envelope carries the HTTP code, the message and Google's status name", async () => {
  const response = renderError(
    new SidecarError("invalid_request", "generationConfig.seed: unsupported field", {
      param: "generationConfig.seed",
    }),
  );
  expect(response.status).toBe(400);
  expect(await response.json()).toEqual({
    error: { code: 400, message: "generationConfig.seed: unsupported field", status: "INVALID_ARGUMENT" },
  });
});

test.each([
  ["invalid_request", 400, "INVALID_ARGUMENT"],
  ["authentication", 401, "UNAUTHENTICATED"],
  ["not_found", 404, "NOT_FOUND"],
  ["request_too_large", 400, "INVALID_ARGUMENT"],
  ["episode_closed", 400, "FAILED_PRECONDITION"],
  ["upstream_transient", 503, "UNAVAILABLE"],
  ["upstream_invalid", 502, "INTERNAL"],
  ["upstream_rejected", 400, "INVALID_ARGUMENT"],
  ["unavailable", 503, "UNAVAILABLE"],
  ["internal", 500, "INTERNAL"],
] as const)("%s → HTTP %d %s", async (kind: ErrorKind, code, status) => {
  expect(geminiStatus(kind)).toBe(status);
  const response = renderError(new SidecarError(kind, "m"));
  expect(response.status).toBe(code);
  expect(((await response.json()) as { error: { code: number } }).error.code).toBe(code);
});
