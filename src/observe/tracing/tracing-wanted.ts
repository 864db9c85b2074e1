/**
 * Whether to trace, from the standard OpenTelemetry variables: an OTLP endpoint
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) turns it on;
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off again. Only the
 * OTLP exporter is built in, so any other OTEL_TRACES_EXPORTER is a config error.
 */
export type TracingDecision = { enabled: true } | { enabled: false; error?: string };

export function tracingWanted(env: Record<string, string | undefined>): TracingDecision {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return { enabled: false };
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === "none") return { enabled: false };
  if (exporter !== undefined && exporter !== "" && exporter !== "otlp")
    return {
      enabled: false,
      error: `OTEL_TRACES_EXPORTER=${exporter}: only "otlp" (over HTTP) or "none" is built in`,
    };
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (protocol && protocol !== "http/json")
    return {
      enabled: false,
      error: `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: this build exports traces as http/json only`,
    };
  return { enabled: true };
}
