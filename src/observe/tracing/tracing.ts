/**
 * What the rest of the sidecar knows of tracing: an observer of record writes, a
 * hono middleware that opens one SERVER span per request and makes it current,
 * the trace fields for log lines, and a flush at shutdown. The OpenTelemetry SDK
 * itself is imported only when tracing is wanted (otel-tracing.ts), so a sidecar
 * without OTEL_* settings loads none of it.
 */
import type { MiddlewareHandler } from "hono";
import type { Observer } from "../observer.ts";
import { tracingWanted } from "./tracing-wanted.ts";

export type Tracing = {
  observer: Observer;
  middleware: MiddlewareHandler;
  /** trace_id and span_id of the current span, for JSON log lines; empty outside a span. */
  logFields: () => Record<string, string>;
  /** Exports what is still buffered. */
  shutdown: () => Promise<void>;
};

export type TracingOptions = {
  env: Record<string, string | undefined>;
  version: string;
  /** The model an episode's upstream requests name (gen_ai.request.model). */
  modelOf: (episode: string) => string | undefined;
};

/** undefined when no OTLP endpoint is configured; throws on settings it cannot honour. */
export async function loadTracing(options: TracingOptions): Promise<Tracing | undefined> {
  const wanted = tracingWanted(options.env);
  if (!wanted.enabled) {
    if (wanted.error) throw new Error(wanted.error);
    return undefined;
  }
  const { createOtelTracing } = await import("./otel-tracing.ts");
  return createOtelTracing(options);
}
