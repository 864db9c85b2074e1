import { describe, expect, test } from "bun:test";
import { invalidField, SidecarError } from "../../lib/errors.ts";
import { renderResponsesError } from "./errors.ts";

describe("OpenAI error envelope", () => {
  test("a bad field: 400 invalid_request_error naming the param", async () => {
    const res = renderResponsesError(invalidField("previous_response_id", "not stored"));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        message: "previous_response_id: not stored",
        type: "invalid_request_error",
        param: "previous_response_id",
        code: "invalid_request",
      },
    });
  });

  test("retryable upstream failure: 5xx server_error; final kinds: 400", async () => {
    const transient = renderResponsesError(
      new SidecarError("upstream_transient", "upstream 503 after 3 attempts"),
    );
    expect(transient.status).toBe(503);
    expect(await transient.json()).toMatchObject({
      error: { type: "server_error", param: null, code: "upstream_transient" },
    });
    expect(renderResponsesError(new SidecarError("upstream_invalid", "bad args")).status).toBe(502);
    for (const kind of ["upstream_rejected", "episode_closed", "request_too_large"] as const) {
      const res = renderResponsesError(new SidecarError(kind, "x"));
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
    }
  });

  test("authentication: 401 authentication_error", async () => {
    const res = renderResponsesError(new SidecarError("authentication", "wrong key"));
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { type: "authentication_error" } });
  });
});
