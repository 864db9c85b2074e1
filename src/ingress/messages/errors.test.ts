import { describe, expect, test } from "bun:test";
import { type ErrorKind, SidecarError } from "../../lib/errors.ts";
import { renderError, toAnthropicError } from "./errors.ts";

describe("Anthropic error envelope", () => {
  test("envelope and status", async () => {
    const res = renderError(new SidecarError("invalid_request", "tools[0].type: server tool"));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: "tools[0].type: server tool" },
    });
  });

  test("only what a retry could fix is retryable for Claude Code (5xx/529), the rest is final", () => {
    const kinds: ErrorKind[] = [
      "invalid_request",
      "authentication",
      "not_found",
      "request_too_large",
      "episode_closed",
      "upstream_transient",
      "upstream_invalid",
      "upstream_rejected",
      "unavailable",
      "internal",
    ];
    expect(Object.fromEntries(kinds.map((k) => [k, toAnthropicError(k)]))).toEqual({
      invalid_request: { status: 400, type: "invalid_request_error" },
      authentication: { status: 401, type: "authentication_error" },
      not_found: { status: 404, type: "not_found_error" },
      request_too_large: { status: 400, type: "invalid_request_error" },
      episode_closed: { status: 400, type: "invalid_request_error" },
      upstream_transient: { status: 529, type: "overloaded_error" },
      upstream_invalid: { status: 500, type: "api_error" },
      upstream_rejected: { status: 400, type: "invalid_request_error" },
      unavailable: { status: 529, type: "overloaded_error" },
      internal: { status: 500, type: "api_error" },
    });
    for (const kind of kinds) {
      const retryable = new SidecarError(kind, "x").retryable;
      expect(toAnthropicError(kind).status >= 500).toBe(retryable || kind === "internal");
    }
  });
});
