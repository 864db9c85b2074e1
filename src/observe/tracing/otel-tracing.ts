/**
 * Tracing with the OpenTelemetry SDK, exported over OTLP/HTTP (the exporter reads
 * the standard OTEL_EXPORTER_OTLP_* variables, the batch processor OTEL_BSP_*,
 * the sampler OTEL_TRACES_SAMPLER, the resource OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES). Span shapes follow the GenAI and MCP semantic
 * conventions (docs/observability.md):
 *   {METHOD} {route}        SERVER, one per request to an episode or the control API;
 *                           for MCP: `{mcp.method.name} {tool}` with mcp.* attributes
 *   chat {model}            CLIENT, one per upstream attempt, child of the request
 *   execute_tool {tool}     INTERNAL, one per admitted call from claim to receipt,
 *                           linked to the chat span that delivered it, one event per
 *                           ledger transition
 *   provider.local_response INTERNAL, a local answer (countTokens, count_tokens)
 * The current span lives in our own AsyncLocalStorage, passed explicitly as the
 * parent: nothing is registered globally. No message contents are put on spans.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { MiddlewareHandler } from "hono";
import type { LedgerEvent } from "../../ledger/events.ts";
import { errorMessage } from "../../lib/error-message.ts";
import type { UpstreamResponseFields } from "../../records/exchange-lines.ts";
import { auxiliarySchema } from "../record-shapes.ts";
import type { Tracing, TracingOptions } from "./tracing.ts";

/** Calls and exchanges are remembered until settled, at most this many (a client that vanished). */
const maxTracked = 10_000;
const providerName = "openai";

type CallState = {
  tool: string;
  exchange: string;
  registeredAt: number;
  deliveredAt?: number;
  span?: Span;
};

const headerGetter = {
  get: (carrier: Headers, key: string) => carrier.get(key) ?? undefined,
  keys: (carrier: Headers) => [...carrier.keys()],
};

/** The route of a path, episode ids replaced: span names stay a small set. */
function routeOf(path: string): string {
  return path.replace(/^\/e\/[^/]+/, "/e/{episode}");
}

export function createOtelTracing(options: TracingOptions): Tracing {
  const resource = resourceFromAttributes({
    "service.name": "ura-sidecar",
    "service.version": options.version,
  }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  const tracer = provider.getTracer("ura-sidecar", options.version);
  const propagator = new W3CTraceContextPropagator();
  const current = new AsyncLocalStorage<Context>();
  const active = () => current.getStore() ?? ROOT_CONTEXT;

  const chatSpans = new Map<string, SpanContext>();
  const calls = new Map<string, CallState>();
  const remember = <V>(map: Map<string, V>, key: string, value: V) => {
    if (map.size >= maxTracked) map.delete(map.keys().next().value as string);
    map.set(key, value);
  };

  const middleware: MiddlewareHandler = async (c, next) => {
    const parent = propagator.extract(ROOT_CONTEXT, c.req.raw.headers, headerGetter);
    const route = routeOf(c.req.path);
    const episode = /^\/e\/([^/]+)/.exec(c.req.path)?.[1];
    const attributes: Attributes = {
      "http.request.method": c.req.method,
      "http.route": route,
      "url.path": route,
      ...(episode ? { "gen_ai.conversation.id": episode } : {}),
    };
    let name = `${c.req.method} ${route}`;
    if (route.endsWith("/mcp") && c.req.method === "POST") {
      const rpc = await mcpRequestOf(c.req.raw);
      if (rpc) {
        name = rpc.tool ? `${rpc.method} ${rpc.tool}` : rpc.method;
        Object.assign(attributes, {
          "mcp.method.name": rpc.method,
          ...(rpc.id !== undefined ? { "jsonrpc.request.id": String(rpc.id) } : {}),
          ...(rpc.tool ? { "gen_ai.tool.name": rpc.tool, "gen_ai.operation.name": "execute_tool" } : {}),
        });
      }
      const session = c.req.header("mcp-session-id");
      if (session) attributes["mcp.session.id"] = session;
    }
    const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
    try {
      await current.run(trace.setSpan(parent, span), next);
      span.setAttribute("http.response.status_code", c.res.status);
      if (c.res.status >= 500) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute("error.type", String(c.res.status));
      }
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
      span.setAttribute("error.type", (error as Error).name);
      throw error;
    } finally {
      span.end();
    }
  };

  function onUpstreamResponse(
    event: { episode: string; exchange: string },
    response: UpstreamResponseFields,
  ) {
    const model = options.modelOf(event.episode);
    const attempts = response.attempts;
    for (const [i, attempt] of attempts.entries()) {
      const last = i === attempts.length - 1;
      const start = Date.parse(attempt.started_at);
      const ok = last && response.validated !== undefined;
      const span = tracer.startSpan(
        `chat${model ? ` ${model}` : ""}`,
        {
          kind: SpanKind.CLIENT,
          startTime: start,
          attributes: {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": providerName,
            "gen_ai.conversation.id": event.episode,
            "ura.exchange.id": event.exchange,
            "ura.upstream.attempt": attempt.attempt,
            ...(model ? { "gen_ai.request.model": model } : {}),
            ...(attempt.status !== undefined ? { "http.response.status_code": attempt.status } : {}),
            "ura.upstream.queue_wait_ms": attempt.queue_ms ?? 0,
            ...(attempt.ended !== undefined ? { "ura.upstream.ended": attempt.ended } : {}),
            ...(attempt.cause !== undefined ? { "ura.upstream.cause": attempt.cause } : {}),
            ...(attempt.provider_code !== undefined
              ? { "ura.upstream.provider_code": attempt.provider_code }
              : {}),
            ...(attempt.retry_in_ms !== undefined ? { "ura.upstream.retry_in_ms": attempt.retry_in_ms } : {}),
          },
        },
        active(),
      );
      // An exchange cancelled before its answer: where and why, on its last attempt's span.
      if (last && response.cancelled) {
        span.setAttribute("ura.upstream.cancelled_at", response.cancelled.at);
        span.setAttribute("ura.upstream.cancel_reason", response.cancelled.reason);
      }
      // The exchange's cost (every billed attempt's: docs/pricing.md) on its last attempt's span.
      if (last && response.cost) {
        span.setAttribute("ura.cost.total", Number(response.cost.total));
        span.setAttribute("ura.cost.currency", response.cost.currency);
      }
      // The span starts when the attempt was sent; the wait for its turn in the shared budget came before.
      if (attempt.queue_ms)
        span.addEvent("ura.upstream.queued", { "ura.upstream.queue_wait_ms": attempt.queue_ms }, start);
      if (ok && response.validated) {
        const { usage, finishReason, toolCalls } = response.validated;
        if (usage) {
          span.setAttribute("gen_ai.usage.input_tokens", usage.inputTokens);
          span.setAttribute("gen_ai.usage.output_tokens", usage.outputTokens);
        }
        if (finishReason) span.setAttribute("gen_ai.response.finish_reasons", [finishReason]);
        if (toolCalls.length > 0) span.setAttribute("ura.tool_calls", toolCalls.length);
        remember(chatSpans, `${event.episode}/${event.exchange}`, span.spanContext());
      } else {
        const errorType =
          attempt.status !== undefined
            ? String(attempt.status)
            : last && response.error
              ? "upstream"
              : "error";
        span.setAttribute("error.type", errorType);
        span.setStatus({ code: SpanStatusCode.ERROR, message: attempt.error ?? response.error ?? "" });
      }
      span.end(start + attempt.ms);
    }
  }

  /** Ledger events arrive as journaled (typed by ledger/events.ts): nothing to parse. */
  function onLedger(episode: string, at: number, line: LedgerEvent) {
    const callId = "callId" in line ? line.callId : undefined;
    const key = callId ? `${episode}/${callId}` : "";
    const call = calls.get(key);
    const here = trace.getSpan(active());
    switch (line.type) {
      case "registered":
        for (const c of line.calls)
          remember(calls, `${episode}/${c.id}`, { tool: c.tool, exchange: line.batchId, registeredAt: at });
        return;
      case "delivered":
      case "revoked":
        for (const state of calls.values())
          if (state.exchange === line.batchId && state.deliveredAt === undefined) {
            if (line.type === "delivered") state.deliveredAt = at;
          }
        if (line.type === "revoked") here?.addEvent("revoked", { "ura.batch.id": line.batchId }, at);
        return;
      case "claimed": {
        if (!call) return;
        const chat = chatSpans.get(`${episode}/${call.exchange}`);
        call.span = tracer.startSpan(
          `execute_tool ${call.tool}`,
          {
            kind: SpanKind.INTERNAL,
            startTime: at,
            attributes: {
              "gen_ai.operation.name": "execute_tool",
              "gen_ai.tool.name": call.tool,
              "gen_ai.tool.call.id": line.callId,
              "gen_ai.tool.type": "function",
              "gen_ai.conversation.id": episode,
            },
            links: chat ? [{ context: chat, attributes: { "ura.link": "delivered_by" } }] : [],
          },
          active(),
        );
        call.span.addEvent("registered", {}, call.registeredAt);
        if (call.deliveredAt !== undefined) call.span.addEvent("delivered", {}, call.deliveredAt);
        call.span.addEvent("claimed", { "ura.claimed.by": line.by }, at);
        return;
      }
      case "submitted":
      case "acknowledged":
        call?.span?.addEvent(line.type, {}, at);
        return;
      case "stop_requested":
      case "stop_answered":
        call?.span?.addEvent(
          line.type,
          {
            "ura.stop.reason": line.reason,
            ...(line.type === "stop_answered" ? { "ura.stop.stopped": line.stopped } : {}),
          },
          at,
        );
        return;
      case "approval_requested":
      case "approved":
        call?.span?.addEvent(line.type, line.type === "approved" ? { "ura.approval.by": line.by } : {}, at);
        return;
      case "rejected":
      case "rate_limited":
        if (call?.span) {
          const attributes = {
            "ura.reason": line.reason,
            ...(line.type === "rejected" ? { "ura.approval.by": line.by } : {}),
          };
          call.span.addEvent(line.type, attributes, at);
          call.span.setAttribute("error.type", line.type);
          call.span.setStatus({ code: SpanStatusCode.ERROR, message: line.reason });
          call.span.end(at);
        }
        calls.delete(key);
        return;
      case "receipt":
        call?.span?.addEvent("receipt", {}, at);
        call?.span?.end(at);
        calls.delete(key);
        return;
      case "failed":
        if (call?.span) {
          call.span.addEvent("failed", { "ura.reason": line.reason }, at);
          call.span.setAttribute("error.type", "executor_failed");
          call.span.setStatus({ code: SpanStatusCode.ERROR, message: line.reason });
          call.span.end(at);
        }
        calls.delete(key);
        return;
      case "refused": {
        const attributes = {
          "gen_ai.tool.name": line.tool,
          "ura.refusal.code": line.code,
          "ura.reason": line.reason,
          ...(line.callId ? { "gen_ai.tool.call.id": line.callId } : {}),
        };
        here?.addEvent("refused", attributes, at);
        call?.span?.addEvent("refused", attributes, at);
        return;
      }
      case "skipped":
        here?.addEvent("skipped", { "gen_ai.tool.call.id": line.callId }, at);
        calls.delete(key);
        return;
      default:
        here?.addEvent(line.type, "reason" in line && line.reason ? { "ura.reason": line.reason } : {}, at);
    }
  }

  function onAuxiliary(episode: string, at: number, data: Record<string, unknown>) {
    const aux = auxiliarySchema.safeParse(data).data;
    if (!aux) return;
    const span = tracer.startSpan(
      "provider.local_response",
      {
        kind: SpanKind.INTERNAL,
        startTime: at,
        attributes: {
          "url.path": routeOf(aux.path),
          "http.response.status_code": aux.status,
          "gen_ai.conversation.id": episode,
          ...(aux.operation ? { "ura.operation": aux.operation } : {}),
          ...(aux.protocol ? { "ura.protocol": aux.protocol } : {}),
        },
      },
      active(),
    );
    span.end(at);
  }

  return {
    middleware,
    observer: {
      observe(event) {
        if (event.kind === "exchange_stage") {
          if (event.line.stage === "upstream_response") onUpstreamResponse(event, event.line);
          else if (event.line.stage === "client_request")
            trace.getSpan(active())?.setAttribute("ura.exchange.id", event.exchange);
        } else if (event.kind === "ledger") onLedger(event.episode, event.at, event.event);
        else if (event.kind === "auxiliary") onAuxiliary(event.episode, event.at, event.data);
      },
    },
    logFields(): Record<string, string> {
      const span = trace.getSpan(active());
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
    shutdown: () => provider.shutdown(),
  };
}

/** The JSON-RPC method (and tool name for tools/call) of an MCP POST; its body is small. */
async function mcpRequestOf(
  request: Request,
): Promise<{ method: string; id?: string | number; tool?: string } | undefined> {
  try {
    const body = (await request.clone().json()) as {
      method?: unknown;
      id?: unknown;
      params?: { name?: unknown };
    };
    if (typeof body?.method !== "string") return undefined;
    const id = typeof body.id === "string" || typeof body.id === "number" ? body.id : undefined;
    const tool =
      body.method === "tools/call" && typeof body.params?.name === "string" ? body.params.name : undefined;
    return { method: body.method, ...(id !== undefined ? { id } : {}), ...(tool ? { tool } : {}) };
  } catch {
    return undefined;
  }
}
