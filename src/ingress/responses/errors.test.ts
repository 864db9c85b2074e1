import { describe, expect, test } from "bun:test";
import { invalidField, SidecarError } from "../../lib/errors.ts";
import { clientRetryPatterns, renderError, toOpenAiError, withoutRetryHints } from "./errors.ts";

describe("OpenAI error envelope", () => {
  test("a bad field: 400 invalid_request_error naming the param", async () => {
    const res = renderError(invalidField("previous_response_id", "not stored"));
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
    const transient = renderError(new SidecarError("upstream_transient", "upstream 503 after 3 attempts"));
    expect(transient.status).toBe(503);
    expect(await transient.json()).toMatchObject({
      error: { type: "server_error", param: null, code: "upstream_transient" },
    });
    expect(renderError(new SidecarError("upstream_invalid", "bad args")).status).toBe(502);
    for (const kind of ["upstream_rejected", "episode_closed", "request_too_large"] as const) {
      const res = renderError(new SidecarError(kind, "x"));
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
    }
  });

  test("authentication: 401 authentication_error", async () => {
    const res = renderError(new SidecarError("authentication", "wrong key"));
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { type: "authentication_error" } });
  });

  test("a final error's text matches none of OpenCode's transient-error patterns, and reads the same", () => {
    const closed = new SidecarError(
      "episode_closed",
      "episode ep_a5030b is failed (provider_error: upstream answered HTTP 503: Service Unavailable, rate limit, fetch failed (after 3 attempts))",
    );
    const body = toOpenAiError(closed);
    const matches = (text: string) => clientRetryPatterns.some((p) => new RegExp(p.source, "i").test(text));
    expect(matches(closed.message)).toBe(true);
    expect(matches(body.error.message)).toBe(false);
    expect(matches(JSON.stringify(body))).toBe(false);
    expect(body.error.message.replaceAll("\u200b", "")).toBe(closed.message);
    expect(withoutRetryHints("request_too_large: 5000123 bytes").replaceAll("\u200b", "")).toBe(
      "request_too_large: 5000123 bytes",
    );
    expect(matches(withoutRetryHints("tools[500].name"))).toBe(false);
  });

  test("a retryable error keeps its text as it is", () => {
    const transient = new SidecarError("upstream_transient", "upstream answered HTTP 503");
    expect(toOpenAiError(transient).error.message).toBe("upstream answered HTTP 503");
  });
});
