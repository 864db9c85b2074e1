import { describe, expect, test } from "bun:test";
import {
  classifyUpstreamFailure,
  type FailureCause,
  type FailureClass,
  readProviderError,
} from "./classify-upstream-failure.ts";

const openai = (message: string, code: string, type = "invalid_request_error") =>
  JSON.stringify({ error: { message, type, code } });
const dashscope = (code: string, message: string) => JSON.stringify({ code, message, request_id: "r-1" });

type Row = [name: string, status: number, body: string, cause: FailureCause, retry: FailureClass["retry"]];

// One row per line of docs/upstream-errors.md.
const rows: Row[] = [
  [
    "429 Throttling.RateQuota (requests per minute)",
    429,
    dashscope("Throttling.RateQuota", "Requests rate limit exceeded, please try again later."),
    "rate_quota",
    "transient",
  ],
  [
    "429 Throttling.AllocationQuota (tokens per minute)",
    429,
    dashscope("Throttling.AllocationQuota", "Allocated quota exceeded, please increase your quota limit."),
    "allocation_quota",
    "transient",
  ],
  [
    "429 insufficient_quota, the OpenAI-compatible TPM body: transient, not billing",
    429,
    openai(
      "You exceeded your current quota, please check your plan and billing details.",
      "insufficient_quota",
      "insufficient_quota",
    ),
    "allocation_quota",
    "transient",
  ],
  [
    "429 Throttling burst protection",
    429,
    dashscope(
      "Throttling",
      "Request rate increased too quickly. To ensure system stability, please adjust your client logic to scale requests more smoothly over time.",
    ),
    "burst",
    "transient",
  ],
  ["429 without a known code", 429, "Too Many Requests", "throttled", "transient"],
  [
    "403 AllocationQuota.FreeTierOnly",
    403,
    dashscope("AllocationQuota.FreeTierOnly", "The free tier of the model has been exhausted."),
    "free_tier_exhausted",
    "final",
  ],
  [
    "401 InvalidApiKey",
    401,
    dashscope("InvalidApiKey", "Invalid API-key provided."),
    "invalid_api_key",
    "final",
  ],
  [
    "401 invalid_api_key (OpenAI-compatible)",
    401,
    openai("Incorrect API key provided.", "invalid_api_key"),
    "invalid_api_key",
    "final",
  ],
  [
    "403 Arrearage",
    403,
    dashscope("Arrearage", "Access denied, please make sure your account is in good standing."),
    "arrearage",
    "final",
  ],
  [
    "400 Arrearage (the older page's status)",
    400,
    openai("Access denied, please make sure your account is in good standing.", "Arrearage", "Arrearage"),
    "arrearage",
    "final",
  ],
  ["403 AccessDenied", 403, dashscope("AccessDenied", "Access denied."), "access_denied", "final"],
  [
    "403 access_denied (OpenAI-compatible)",
    403,
    openai("Access denied.", "access_denied"),
    "access_denied",
    "final",
  ],
  [
    "404 ModelNotFound",
    404,
    dashscope("ModelNotFound", "Model not found (qwen-nope)!"),
    "model_not_found",
    "final",
  ],
  [
    "404 model_not_found (OpenAI-compatible)",
    404,
    openai("The model `qwen-nope` does not exist.", "model_not_found"),
    "model_not_found",
    "final",
  ],
  [
    "400 InvalidParameter",
    400,
    dashscope("InvalidParameter", "Range of input length should be [1, 129024]"),
    "invalid_parameter",
    "final",
  ],
  [
    "400 invalid_parameter_error (Qwen's enable_thinking answer)",
    400,
    openai(
      "<400> InternalError.Algo.InvalidParameter: The value of the enable_thinking parameter is restricted to True.",
      "invalid_parameter_error",
    ),
    "invalid_parameter",
    "final",
  ],
  [
    "400 DataInspectionFailed",
    400,
    dashscope("DataInspectionFailed", "Input data may contain inappropriate content."),
    "data_inspection",
    "final",
  ],
  [
    "400 data_inspection_failed (OpenAI-compatible)",
    400,
    openai("Input data may contain inappropriate content.", "data_inspection_failed"),
    "data_inspection",
    "final",
  ],
  ["418 anything else 4xx", 418, "", "rejected", "final"],
  [
    "500 InternalError",
    500,
    dashscope("InternalError", "An internal error has occured."),
    "server_error",
    "transient",
  ],
  ["502 bad gateway, no body", 502, "", "server_error", "transient"],
  ["503 service unavailable", 503, openai("Service Unavailable", "error"), "server_error", "transient"],
  ["504 gateway timeout", 504, "<html>504</html>", "server_error", "transient"],
];

describe("classifyUpstreamFailure: HTTP answers", () => {
  for (const [name, status, body, cause, retry] of rows) {
    test(`${name} → ${retry} ${cause}`, () => {
      const result = classifyUpstreamFailure({ kind: "http", status, body });
      expect({ cause: result.cause, retry: result.retry }).toEqual({ cause, retry });
      expect(result.throttle).toBe(status === 429 && retry === "transient");
      expect(result.message).toContain(`HTTP ${status}`);
    });
  }

  test("the client is told the cause and the provider's code and message", () => {
    const key = classifyUpstreamFailure({
      kind: "http",
      status: 401,
      body: dashscope("InvalidApiKey", "Invalid API-key provided."),
    });
    expect(key.message).toStartWith(
      "the upstream rejected the API key (InvalidApiKey, HTTP 401): Invalid API-key provided.",
    );
    expect(key.providerCode).toBe("InvalidApiKey");
    const arrear = classifyUpstreamFailure({
      kind: "http",
      status: 403,
      body: dashscope("Arrearage", "Access denied, please make sure your account is in good standing."),
    });
    expect(arrear.message).toStartWith("the provider account is in arrears (Arrearage, HTTP 403)");
    const tpm = classifyUpstreamFailure({
      kind: "http",
      status: 429,
      body: openai(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "insufficient_quota",
      ),
    });
    expect(tpm.message).toStartWith(
      "the upstream throttled the request: tokens per minute (insufficient_quota, HTTP 429)",
    );
  });
});

describe("classifyUpstreamFailure: no answer", () => {
  test("a connection that failed or broke off is transient", () => {
    const result = classifyUpstreamFailure({ kind: "connection", detail: "ECONNRESET" });
    expect(result).toMatchObject({ cause: "connection", retry: "transient", throttle: false });
    expect(result.message).toContain("ECONNRESET");
  });
  test("an idle timeout is transient and says how long the upstream was silent", () => {
    const result = classifyUpstreamFailure({ kind: "idle_timeout", idleMs: 90_000 });
    expect(result).toMatchObject({ cause: "idle_timeout", retry: "transient" });
    expect(result.message).toContain("no byte for 90000 ms (upstream.idle_timeout_ms)");
  });
  test("a stream that ended without [DONE] is transient (nothing was delivered)", () => {
    const result = classifyUpstreamFailure({ kind: "stream_cut", detail: "no [DONE]" });
    expect(result).toMatchObject({ cause: "stream_cut", retry: "transient" });
    expect(result.message).toContain("ended before completion");
  });
});

describe("classifyUpstreamFailure: an error event in a 200 stream", () => {
  const event = (code: string, message: string) => JSON.stringify({ error: { code, message } });
  test("read by the provider's code, like an HTTP answer", () => {
    expect(
      classifyUpstreamFailure({
        kind: "stream_error",
        body: event("DataInspectionFailed", "Output data may contain inappropriate content."),
      }),
    ).toMatchObject({ cause: "data_inspection", retry: "final" });
    expect(
      classifyUpstreamFailure({
        kind: "stream_error",
        body: event("Throttling.AllocationQuota", "Allocated quota exceeded"),
      }),
    ).toMatchObject({ cause: "allocation_quota", retry: "transient", throttle: true });
  });
  test("an unknown code is the provider's own failure: transient", () => {
    const result = classifyUpstreamFailure({
      kind: "stream_error",
      body: event("InternalError", "An internal error has occured."),
    });
    expect(result).toMatchObject({
      cause: "server_error",
      retry: "transient",
      providerCode: "InternalError",
    });
    expect(result.message).toBe(
      "the upstream failed (InternalError, an error event in the stream): An internal error has occured.",
    );
  });
});

describe("readProviderError", () => {
  test("reads both of Model Studio's shapes, and plain text", () => {
    expect(readProviderError(openai("m", "c", "t"))).toEqual({ code: "c", type: "t", message: "m" });
    expect(readProviderError(dashscope("InvalidApiKey", "m"))).toEqual({
      code: "InvalidApiKey",
      message: "m",
    });
    expect(readProviderError("upstream connect error")).toEqual({ message: "upstream connect error" });
    expect(readProviderError("")).toEqual({});
    expect(readProviderError("[1,2]")).toEqual({});
  });
});
