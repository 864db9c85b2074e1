/**
 * The provider's error model as one total function: an upstream failure (an HTTP
 * error answer, a connection that failed, an attempt cut for silence, a stream that
 * ended without `[DONE]`) → transient (retry within the budgets) or final (fail at
 * once), the cause recorded with the attempt, and the words the client is told.
 *
 * The table and its sources (Alibaba Cloud Model Studio's error-code and rate-limit
 * pages) are in docs/upstream-errors.md; each row there has a test here. The rule
 * that matters most: Model Studio's OpenAI-compatible API answers its tokens-per-minute
 * limit with HTTP 429 `insufficient_quota`, which clears within the minute — it is
 * retried, never read as an exhausted balance.
 */

/** What went wrong with one attempt, as the client saw it. */
export type FailureSignal =
  /** An HTTP answer of 400 or more; `body` is the answer's text (JSON or not). */
  | { kind: "http"; status: number; body: string }
  /** No answer, or the answer's body broke off: refused, reset, DNS … */
  | { kind: "connection"; detail: string }
  /** Nothing arrived from the upstream (head or body) for `idleMs`. */
  | { kind: "idle_timeout"; idleMs: number }
  /** The stream ended cleanly but without its `data: [DONE]` sentinel. */
  | { kind: "stream_cut"; detail: string }
  /** A `data:` event carrying an error object instead of a chunk, after a 200 head; `body` is its JSON. */
  | { kind: "stream_error"; body: string };

/** Stable names for the records, the metrics and docs/upstream-errors.md. */
export type FailureCause =
  | "rate_quota"
  | "allocation_quota"
  | "burst"
  | "throttled"
  | "free_tier_exhausted"
  | "invalid_api_key"
  | "arrearage"
  | "access_denied"
  | "model_not_found"
  | "data_inspection"
  | "invalid_parameter"
  | "rejected"
  | "server_error"
  | "connection"
  | "idle_timeout"
  | "stream_cut";

export type FailureClass = {
  /** transient: a later attempt may succeed; final: no attempt of this request can. */
  retry: "transient" | "final";
  cause: FailureCause;
  /** The provider said slow down: the shared pace hears it as a throttle. */
  throttle: boolean;
  /** The provider's own `code` (or `type`) as sent, when the body carried one. */
  providerCode?: string;
  /** For the client and the records: the cause in words, the provider's code and message. */
  message: string;
};

type ProviderError = { code?: string; type?: string; message?: string };

/**
 * The error fields of a body in either shape Model Studio uses: OpenAI-compatible
 * `{"error":{"message","type","code"}}` or DashScope's `{"code","message","request_id"}`.
 */
export function readProviderError(body: string): ProviderError {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return body.trim() === "" ? {} : { message: body.slice(0, 300) };
  }
  if (typeof json !== "object" || json === null) return {};
  const record = json as Record<string, unknown>;
  const inner =
    typeof record.error === "object" && record.error !== null
      ? (record.error as Record<string, unknown>)
      : record;
  const text = (value: unknown) =>
    typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : undefined;
  const out: ProviderError = {};
  const code = text(inner.code);
  const type = text(inner.type);
  const message = text(inner.message) ?? (typeof record.error === "string" ? record.error : undefined);
  if (code !== undefined) out.code = code;
  if (type !== undefined) out.type = type;
  if (message !== undefined) out.message = message;
  return out;
}

type Row = {
  cause: FailureCause;
  retry: FailureClass["retry"];
  throttle?: boolean;
  /** What the client reads first. */
  says: string;
  /** What to do about it, after the provider's own message. */
  hint?: string;
};

const rows: Record<FailureCause, Row> = {
  rate_quota: {
    cause: "rate_quota",
    retry: "transient",
    throttle: true,
    says: "the upstream throttled the request: requests per minute",
  },
  allocation_quota: {
    cause: "allocation_quota",
    retry: "transient",
    throttle: true,
    says: "the upstream throttled the request: tokens per minute",
  },
  burst: {
    cause: "burst",
    retry: "transient",
    throttle: true,
    says: "the upstream throttled the request: request rate increased too quickly",
  },
  throttled: {
    cause: "throttled",
    retry: "transient",
    throttle: true,
    says: "the upstream throttled the request",
  },
  free_tier_exhausted: {
    cause: "free_tier_exhausted",
    retry: "final",
    says: "the model's free quota is used up and the account accepts the free tier only",
  },
  invalid_api_key: {
    cause: "invalid_api_key",
    retry: "final",
    says: "the upstream rejected the API key",
    hint: "the key (URA_UPSTREAM_API_KEY), its region and upstream.url must match",
  },
  arrearage: {
    cause: "arrearage",
    retry: "final",
    says: "the provider account is in arrears",
    hint: "settle the account's overdue payment, then start a new episode",
  },
  access_denied: { cause: "access_denied", retry: "final", says: "the upstream denied access" },
  model_not_found: {
    cause: "model_not_found",
    retry: "final",
    says: "the upstream does not know the model (upstream.model)",
  },
  data_inspection: {
    cause: "data_inspection",
    retry: "final",
    says: "the provider's content inspection refused the request",
  },
  invalid_parameter: {
    cause: "invalid_parameter",
    retry: "final",
    says: "the upstream rejected the request as invalid",
  },
  rejected: { cause: "rejected", retry: "final", says: "the upstream rejected the request" },
  server_error: { cause: "server_error", retry: "transient", says: "the upstream failed" },
  connection: { cause: "connection", retry: "transient", says: "the connection to the upstream failed" },
  idle_timeout: { cause: "idle_timeout", retry: "transient", says: "the upstream went silent" },
  stream_cut: {
    cause: "stream_cut",
    retry: "transient",
    says: "the upstream stream ended before completion",
  },
};

const is = (value: string | undefined, ...names: string[]) =>
  value !== undefined && names.some((name) => value.toLowerCase() === name.toLowerCase());

/** The row the provider's code (or, failing that, its message) names; undefined when neither is known. */
function rowForCode(error: ProviderError): Row | undefined {
  const { code, type } = error;
  const message = error.message ?? "";
  const named = (...names: string[]) => is(code, ...names) || is(type, ...names);
  // Account and key problems come first: Model Studio sends some of them with 400 or 429.
  if (named("Arrearage") || /good standing|overdue payment|in arrears/i.test(message)) return rows.arrearage;
  if (named("InvalidApiKey", "invalid_api_key")) return rows.invalid_api_key;
  if ((code ?? "").includes("FreeTierOnly") || /free tier .*exhausted|free quota .*exhausted/i.test(message))
    return rows.free_tier_exhausted;
  if (named("Throttling.RateQuota") || /requests rate limit exceeded|current requests list/i.test(message))
    return rows.rate_quota;
  if (
    named("Throttling.AllocationQuota", "insufficient_quota") ||
    /allocated quota exceeded|exceeded your current quota/i.test(message)
  )
    return rows.allocation_quota;
  if (/rate increased too quickly/i.test(message)) return rows.burst;
  if ((code ?? "").startsWith("Throttling")) return rows.throttled;
  if (named("DataInspectionFailed", "data_inspection_failed")) return rows.data_inspection;
  if (named("ModelNotFound", "model_not_found")) return rows.model_not_found;
  if (named("AccessDenied", "access_denied")) return rows.access_denied;
  return undefined;
}

const namesInvalidParameter = (error: ProviderError) =>
  is(error.code, "InvalidParameter", "invalid_parameter_error") ||
  is(error.type, "InvalidParameter", "invalid_parameter_error");

/** The row for an HTTP error answer: the provider's code first, its message next, the status last. */
function rowForHttp(status: number, error: ProviderError): Row {
  const named = rowForCode(error);
  if (named) return named;
  if (status === 429) return rows.throttled;
  if (status >= 500 || status === 408) return rows.server_error;
  if (namesInvalidParameter(error)) return rows.invalid_parameter;
  if (status === 401) return rows.invalid_api_key;
  if (status === 403) return rows.access_denied;
  if (status === 404) return rows.model_not_found;
  return status === 400 ? rows.invalid_parameter : rows.rejected;
}

/** One failure's fields for the records and the client. */
function describe(row: Row, error: ProviderError, where: string): FailureClass {
  const providerCode = error.code ?? error.type;
  const label = [providerCode, where].filter(Boolean).join(", ");
  return {
    ...classOf(row),
    ...(providerCode !== undefined ? { providerCode } : {}),
    message: `${row.says} (${label})${error.message ? `: ${error.message}` : ""}${row.hint ? ` — ${row.hint}` : ""}`,
  };
}

/**
 * Whether an attempt's recorded cause is one the provider uses to say slow down (the
 * shared pace hears it as a throttle), whether it came as an HTTP 429 or as an error
 * event inside a 200 stream.
 */
export function isThrottleCause(cause: string | undefined): boolean {
  return cause !== undefined && Object.hasOwn(rows, cause) && rows[cause as FailureCause].throttle === true;
}

export function classifyUpstreamFailure(signal: FailureSignal): FailureClass {
  switch (signal.kind) {
    case "http": {
      const error = readProviderError(signal.body);
      return describe(rowForHttp(signal.status, error), error, `HTTP ${signal.status}`);
    }
    case "stream_error": {
      // After a 200 head: only the provider's code says what it was; an unknown one is the provider's fault.
      const error = readProviderError(signal.body);
      const row =
        rowForCode(error) ?? (namesInvalidParameter(error) ? rows.invalid_parameter : rows.server_error);
      return describe(row, error, "an error event in the stream");
    }
    case "connection":
      return { ...classOf(rows.connection), message: `${rows.connection.says}: ${signal.detail}` };
    case "idle_timeout":
      return {
        ...classOf(rows.idle_timeout),
        message: `${rows.idle_timeout.says}: no byte for ${signal.idleMs} ms (upstream.idle_timeout_ms), so the attempt was cut`,
      };
    case "stream_cut":
      return { ...classOf(rows.stream_cut), message: `${rows.stream_cut.says} (${signal.detail})` };
    default: {
      const never: never = signal;
      throw new Error(`unknown failure signal ${JSON.stringify(never)}`);
    }
  }
}

function classOf(row: Row): Omit<FailureClass, "message"> {
  return { retry: row.retry, cause: row.cause, throttle: row.throttle ?? false };
}
