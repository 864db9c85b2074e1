/**
 * An OTLP/HTTP trace receiver for tests: accepts POST /v1/traces in the OTLP
 * JSON encoding (what the OpenTelemetry JS exporter sends as http/json),
 * decodes each ExportTraceServiceRequest by the OTLP JSON mapping of the
 * opentelemetry-proto definitions (hex ids, nanosecond times, AnyValue
 * attributes, SpanKind numbers) and keeps the spans.
 */
import { z } from "zod";

const anyValueSchema: z.ZodType<unknown> = z.lazy(() =>
  z.union([
    z.object({ stringValue: z.string() }).transform((v) => v.stringValue),
    z.object({ boolValue: z.boolean() }).transform((v) => v.boolValue),
    z.object({ intValue: z.union([z.string(), z.number()]) }).transform((v) => Number(v.intValue)),
    z.object({ doubleValue: z.number() }).transform((v) => v.doubleValue),
    z
      .object({ arrayValue: z.object({ values: z.array(anyValueSchema).default([]) }) })
      .transform((v) => v.arrayValue.values),
  ]),
);
const keyValuesSchema = z
  .array(z.object({ key: z.string(), value: anyValueSchema }))
  .default([])
  .transform((kvs) => Object.fromEntries(kvs.map((kv) => [kv.key, kv.value])));
const hexId = (bytes: number) => z.string().regex(new RegExp(`^[0-9a-f]{${bytes * 2}}$`));
const nanos = z.union([z.string(), z.number()]).transform((v) => Number(BigInt(v) / 1_000_000n));

/** SpanKind as numbered in trace.proto. */
export const spanKind = { internal: 1, server: 2, client: 3 } as const;

const spanSchema = z.object({
  traceId: hexId(16),
  spanId: hexId(8),
  parentSpanId: z.union([hexId(8), z.literal("")]).optional(),
  name: z.string(),
  kind: z.number().int(),
  startTimeUnixNano: nanos,
  endTimeUnixNano: nanos,
  attributes: keyValuesSchema,
  events: z
    .array(z.object({ name: z.string(), timeUnixNano: nanos, attributes: keyValuesSchema }))
    .default([]),
  links: z.array(z.object({ traceId: hexId(16), spanId: hexId(8), attributes: keyValuesSchema })).default([]),
  status: z.object({ code: z.number().int().optional(), message: z.string().optional() }).optional(),
});
export type ReceivedSpan = z.infer<typeof spanSchema> & { resource: Record<string, unknown> };

const exportTraceServiceRequestSchema = z.object({
  resourceSpans: z.array(
    z.object({
      resource: z.object({ attributes: keyValuesSchema }),
      scopeSpans: z.array(z.object({ spans: z.array(spanSchema) })),
    }),
  ),
});

export function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const problems: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (req.method !== "POST" || path !== "/v1/traces") return new Response("not found", { status: 404 });
      if (!req.headers.get("content-type")?.startsWith("application/json")) {
        problems.push(`content-type ${req.headers.get("content-type")}`);
        return new Response("unsupported", { status: 415 });
      }
      const decoded = exportTraceServiceRequestSchema.safeParse(await req.json());
      if (!decoded.success) {
        problems.push(decoded.error.message);
        return new Response("bad request", { status: 400 });
      }
      for (const rs of decoded.data.resourceSpans)
        for (const ss of rs.scopeSpans)
          for (const span of ss.spans) spans.push({ ...span, resource: rs.resource.attributes });
      return Response.json({});
    },
  });
  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    spans,
    problems,
    stop: () => server.stop(true),
  };
}
