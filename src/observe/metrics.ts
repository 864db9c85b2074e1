/**
 * Prometheus metrics, derived from observed record writes (observer.ts) and, at
 * scrape time, from the episodes' state. prom-client renders the text exposition
 * format: a small, long-maintained library that runs unchanged under Bun and in
 * the compiled binary, so the format's escaping and histogram rules are not ours
 * to get wrong. A registry per sidecar, never the library's global one.
 * Labels are bounded sets (protocol, outcome, stage, tool from the manifest,
 * refusal code, status class); episode and call ids belong to traces and records.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { LedgerEvent } from "../ledger/events.ts";
import { costAmount, formatCost } from "../pricing/exchange-cost.ts";
import type { ExchangeStage } from "../records/exchange-lines.ts";
import { isThrottleCause } from "../upstream/classify-upstream-failure.ts";
import type { ObservedEvent, Observer } from "./observer.ts";
import { auxiliarySchema, statusClass } from "./record-shapes.ts";

export type MetricsSources = {
  version: string;
  /** The state of every episode this process knows (scrape time). */
  episodeStates: () => string[];
  /** MCP sessions open right now, over all episodes. */
  openMcpSessions: () => number;
  /** Calls claimed before a restart whose outcome is unknown (they may or may not have run). */
  uncertainCalls: () => number;
  /** The upstream budget all episodes share (src/upstream/upstream-budget.ts), read at scrape time. */
  upstreamBudget?: () => { waiting: number; inFlight: number; pace: number };
  /** Record shipping, when configured: each ended episode's shipping state and the counts since start-up. */
  shipping?: {
    states: () => string[];
    totals: () => {
      attempts_failed: number;
      episodes_shipped: number;
      objects_uploaded: number;
      bytes_uploaded: number;
      blobs_already_present: number;
    };
  };
};

/** Seconds buckets for work from a millisecond (cached image) to minutes (a slow model). */
const secondsBuckets = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** The GenAI semantic conventions' advised buckets for gen_ai.client.token.usage. */
const tokenBuckets = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304];
/** In-flight bookkeeping is bounded: a call never settled (client gone) must not grow memory forever. */
const maxTracked = 10_000;

type ExchangeTimes = { protocol: string; times: Partial<Record<ExchangeStage, number>> };
type CallTimes = { tool: string; submittedAt?: number };

/** The sidecar's metrics: counted from observed record writes, rendered for a scrape. */
export interface Metrics {
  /** Hung on the records (observer.ts): every exchange line, ledger and auxiliary write counts. */
  observer: Observer;
  /** The exposition format's content type. */
  contentType: string;
  /** The text exposition of every metric. */
  render(): Promise<string>;
}

export function createMetrics(sources: MetricsSources): Metrics {
  const registry = new Registry();
  const registers = [registry];
  new Gauge({
    name: "ura_build_info",
    help: "Build of this sidecar (value is always 1).",
    labelNames: ["version"],
    registers,
  }).set({ version: sources.version }, 1);
  const exchanges = new Counter({
    name: "ura_exchanges_total",
    help: "Model exchanges finished, by client protocol and outcome (delivered, failed, revoked).",
    labelNames: ["protocol", "outcome"],
    registers,
  });
  const exchangeFailures = new Counter({
    name: "ura_exchange_failures_total",
    help: "Failed model exchanges by client protocol and error kind.",
    labelNames: ["protocol", "kind"],
    registers,
  });
  const stageSeconds = new Histogram({
    name: "ura_exchange_stage_duration_seconds",
    help: "Time spent in each exchange stage: context (translate + policy), images (PNG to WebP + request build), upstream (all attempts), deliver (render + write to the client).",
    labelNames: ["stage"],
    buckets: secondsBuckets,
    registers,
  });
  const upstreamAttempts = new Counter({
    name: "ura_upstream_attempts_total",
    help: "Upstream Chat Completions attempts by HTTP status class (error: no HTTP answer).",
    labelNames: ["status_class"],
    registers,
  });
  const upstreamRetries = new Counter({
    name: "ura_upstream_retries_total",
    help: "Upstream attempts that were retries of an earlier attempt of the same exchange.",
    registers,
  });
  const firstByte = new Histogram({
    name: "ura_upstream_time_to_first_byte_seconds",
    help: "From sending an upstream attempt to its response headers.",
    buckets: secondsBuckets,
    registers,
  });
  const queueWait = new Histogram({
    name: "ura_upstream_queue_wait_seconds",
    help: "Time an upstream attempt waited for its turn in the shared upstream budget (0 when it went at once).",
    buckets: secondsBuckets,
    registers,
  });
  const throttledAttempts = new Counter({
    name: "ura_upstream_throttled_attempts_total",
    help: "Upstream attempts the provider throttled (an HTTP 429, or a throttle error event inside a 200 stream): each one lowers the shared pace.",
    registers,
  });
  const operationSeconds = new Histogram({
    name: "gen_ai_client_operation_duration_seconds",
    help: "GenAI client operation duration (one upstream chat attempt).",
    labelNames: ["gen_ai_operation_name", "gen_ai_provider_name", "error_type"],
    buckets: secondsBuckets,
    registers,
  });
  const tokenUsage = new Histogram({
    name: "gen_ai_client_token_usage",
    help: "Tokens per upstream answer as reported by the upstream, by type (input, output).",
    labelNames: ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_token_type"],
    buckets: tokenBuckets,
    registers,
  });
  const inputTokens = new Counter({
    name: "ura_upstream_input_tokens_total",
    help: "Prompt tokens of upstream answers by what the provider's prompt cache did with them: read (served from the cache), write (written to a new explicit cache entry), none (neither).",
    labelNames: ["cache"],
    registers,
  });
  // Summed exactly (integers, src/pricing/exchange-cost.ts) and turned into the exposition's
  // float once per scrape, so the series never drifts from the records' sum.
  const costTotals = new Map<string, { model: string; currency: string; amount: bigint }>();
  new Counter({
    name: "ura_upstream_cost_total",
    help: "What the upstream answers cost by the operator's price table (upstream.prices, docs/pricing.md), by model and currency: every billed attempt, a refused answer's included.",
    labelNames: ["model", "currency"],
    registers,
    collect() {
      this.reset();
      for (const { model, currency, amount } of costTotals.values())
        this.inc({ model, currency }, Number(formatCost(amount)));
    },
  });
  const toolCalls = new Counter({
    name: "ura_tool_calls_total",
    help: "Tool call transitions by manifest tool and outcome: delivered, admitted (claimed), refused, completed (receipt), failed, revoked, skipped, approval_requested, approved, rejected (by an operator, or unanswered), rate_limited (ura_tool_calls_uncertain counts those uncertain after a restart).",
    labelNames: ["tool", "outcome"],
    registers,
  });
  const stops = new Counter({
    name: "ura_executor_stops_total",
    help: "Stops asked of the executor for jobs in flight (manifest `stop`), by reason (cancelled, abandoned, deadline, drain_overrun) and outcome (stopped, not_stopped, no_answer).",
    labelNames: ["reason", "outcome"],
    registers,
  });
  const refusals = new Counter({
    name: "ura_tool_call_refusals_total",
    help: "Callbacks refused by the ledger, by tool and refusal code.",
    labelNames: ["tool", "code"],
    registers,
  });
  const receiptSeconds = new Histogram({
    name: "ura_executor_receipt_duration_seconds",
    help: "From submitting an admitted call to the executor to its receipt.",
    labelNames: ["tool"],
    buckets: secondsBuckets,
    registers,
  });
  const pngBytes = new Counter({
    name: "ura_image_png_bytes_total",
    help: "Bytes of client PNG images replaced by WebP on the way upstream.",
    registers,
  });
  const webpBytes = new Counter({
    name: "ura_image_webp_bytes_total",
    help: "Bytes of the lossless WebP images sent upstream in their place.",
    registers,
  });
  const imagesOmitted = new Counter({
    name: "ura_context_images_omitted_total",
    help: "Tool-result images the context policy replaced by an omission notice.",
    registers,
  });
  const blocksRemoved = new Counter({
    name: "ura_context_blocks_removed_total",
    help: "Call/result blocks the context policy removed.",
    registers,
  });
  const recordsBytes = new Counter({
    name: "ura_records_written_bytes_total",
    help: "Bytes appended to episode records, by file.",
    labelNames: ["file"],
    registers,
  });
  const recordsFailures = new Counter({
    name: "ura_records_failures_total",
    help: "Record writes that failed (the exchange or event they belong to failed with them), by file.",
    labelNames: ["file"],
    registers,
  });
  const localResponses = new Counter({
    name: "ura_local_responses_total",
    help: "Requests answered locally without an upstream call (countTokens, count_tokens …), by operation and HTTP status.",
    labelNames: ["operation", "status"],
    registers,
  });
  new Gauge({
    name: "ura_episodes",
    help: "Episodes known to this process, by state.",
    labelNames: ["state"],
    registers,
    collect() {
      this.reset();
      for (const state of sources.episodeStates()) this.inc({ state });
    },
  });
  new Gauge({
    name: "ura_mcp_sessions",
    help: "MCP sessions open now.",
    registers,
    collect() {
      this.set(sources.openMcpSessions());
    },
  });

  new Gauge({
    name: "ura_tool_calls_uncertain",
    help: "Tool calls claimed before a restart without a receipt: they may or may not have run.",
    registers,
    collect() {
      this.set(sources.uncertainCalls());
    },
  });

  if (sources.upstreamBudget) registerBudgetMetrics(sources.upstreamBudget, registers);
  if (sources.shipping) registerShippingMetrics(sources.shipping, registers);

  const inFlight = new Map<string, ExchangeTimes>();
  const calls = new Map<string, CallTimes>();
  const batches = new Map<string, string[]>();
  const remember = <V>(map: Map<string, V>, key: string, value: V) => {
    if (map.size >= maxTracked) map.delete(map.keys().next().value as string);
    map.set(key, value);
  };
  const between = (times: ExchangeTimes["times"], from: ExchangeStage, to: ExchangeStage, stage: string) => {
    const start = times[from];
    const end = times[to];
    if (start !== undefined && end !== undefined) stageSeconds.observe({ stage }, (end - start) / 1000);
  };

  /** Exchange lines arrive as written (typed by records/exchange-lines.ts): nothing to parse. */
  function onExchange(event: Extract<ObservedEvent, { kind: "exchange_stage" }>) {
    const key = `${event.episode}/${event.exchange}`;
    const { line } = event;
    if (line.stage === "client_request") remember(inFlight, key, { protocol: line.protocol, times: {} });
    const exchange = inFlight.get(key);
    if (!exchange) return;
    exchange.times[line.stage] = event.at;
    switch (line.stage) {
      case "after_context":
        imagesOmitted.inc(line.decision.images_omitted.length);
        blocksRemoved.inc(line.decision.blocks_removed.length);
        return;
      case "upstream_request":
        pngBytes.inc(line.images.bytesBefore);
        webpBytes.inc(line.images.bytesAfter);
        return;
      case "upstream_response": {
        for (const attempt of line.attempts) {
          upstreamAttempts.inc({ status_class: statusClass(attempt.status) });
          if (attempt.attempt > 1) upstreamRetries.inc();
          if (attempt.first_byte_ms !== undefined) firstByte.observe(attempt.first_byte_ms / 1000);
          queueWait.observe((attempt.queue_ms ?? 0) / 1000);
          if (isThrottleCause(attempt.cause)) throttledAttempts.inc();
          const ok = attempt.status !== undefined && attempt.status < 400 && !attempt.error;
          operationSeconds.observe(
            {
              gen_ai_operation_name: "chat",
              gen_ai_provider_name: "openai",
              error_type: ok ? "" : attempt.status ? String(attempt.status) : "error",
            },
            attempt.ms / 1000,
          );
        }
        if (line.cost) {
          const { model, currency } = line.cost;
          const key = JSON.stringify([model, currency]);
          const sum = costTotals.get(key) ?? { model, currency, amount: 0n };
          sum.amount += costAmount(line.cost.total);
          costTotals.set(key, sum);
        }
        const usage = line.validated?.usage;
        if (usage) {
          const labels = { gen_ai_operation_name: "chat", gen_ai_provider_name: "openai" };
          tokenUsage.observe({ ...labels, gen_ai_token_type: "input" }, usage.inputTokens);
          tokenUsage.observe({ ...labels, gen_ai_token_type: "output" }, usage.outputTokens);
          const read = usage.cachedInputTokens ?? 0;
          const write = usage.cacheCreationInputTokens ?? 0;
          inputTokens.inc({ cache: "read" }, read);
          inputTokens.inc({ cache: "write" }, write);
          inputTokens.inc({ cache: "none" }, Math.max(0, usage.inputTokens - read - write));
        }
        return;
      }
      case "status": {
        inFlight.delete(key);
        exchanges.inc({ protocol: exchange.protocol, outcome: line.status });
        if (line.status === "failed")
          exchangeFailures.inc({ protocol: exchange.protocol, kind: line.error.kind });
        const t = exchange.times;
        between(t, "client_request", "after_context", "context");
        between(t, "after_context", "upstream_request", "images");
        between(t, "upstream_request", "upstream_response", "upstream");
        if (line.status !== "failed") between(t, "upstream_response", "status", "deliver");
        return;
      }
    }
  }

  /** Ledger events arrive as journaled (typed by ledger/events.ts): nothing to parse. */
  function onLedger(episode: string, at: number, line: LedgerEvent) {
    const callId = "callId" in line ? line.callId : undefined;
    const call = callId ? calls.get(`${episode}/${callId}`) : undefined;
    const count = (outcome: string, tool = call?.tool) => toolCalls.inc({ tool: tool ?? "unknown", outcome });
    switch (line.type) {
      case "registered":
        for (const c of line.calls) remember(calls, `${episode}/${c.id}`, { tool: c.tool });
        remember(
          batches,
          `${episode}/${line.batchId}`,
          line.calls.map((c) => c.tool),
        );
        break;
      case "delivered":
      case "revoked":
        for (const tool of batches.get(`${episode}/${line.batchId}`) ?? []) count(line.type, tool);
        batches.delete(`${episode}/${line.batchId}`);
        break;
      case "claimed":
        count("admitted");
        break;
      case "refused":
        count("refused", line.tool);
        refusals.inc({ tool: line.tool, code: line.code });
        break;
      case "submitted":
        if (call) call.submittedAt = at;
        break;
      case "receipt":
        count("completed");
        if (call?.submittedAt !== undefined)
          receiptSeconds.observe({ tool: call.tool }, (at - call.submittedAt) / 1000);
        calls.delete(`${episode}/${callId}`);
        break;
      case "failed":
      case "skipped":
      case "rejected":
      case "rate_limited":
        count(line.type);
        calls.delete(`${episode}/${callId}`);
        break;
      case "approval_requested":
      case "approved":
        count(line.type);
        break;
      case "stop_answered":
        stops.inc({
          reason: line.reason,
          outcome: line.stopped ? "stopped" : line.status === null ? "no_answer" : "not_stopped",
        });
        break;
    }
  }

  const observer: Observer = {
    observe(event) {
      switch (event.kind) {
        case "exchange_stage":
          return onExchange(event);
        case "ledger":
          return onLedger(event.episode, event.at, event.event);
        case "auxiliary": {
          const aux = auxiliarySchema.safeParse(event.data).data;
          if (aux) localResponses.inc({ operation: aux.operation ?? "unknown", status: String(aux.status) });
          return;
        }
        case "records_written":
          return recordsBytes.inc({ file: event.file }, event.bytes);
        case "records_failure":
          return recordsFailures.inc({ file: event.file });
      }
    },
  };

  return {
    observer,
    contentType: registry.contentType,
    render: () => registry.metrics(),
  };
}

/** The shared upstream budget's state, read at scrape time. */
function registerBudgetMetrics(state: NonNullable<MetricsSources["upstreamBudget"]>, registers: Registry[]) {
  new Gauge({
    name: "ura_upstream_queue_depth",
    help: "Upstream attempts waiting for their turn in the shared upstream budget.",
    registers,
    collect() {
      this.set(state().waiting);
    },
  });
  new Gauge({
    name: "ura_upstream_in_flight",
    help: "Upstream attempts in flight, over all episodes.",
    registers,
    collect() {
      this.set(state().inFlight);
    },
  });
  new Gauge({
    name: "ura_upstream_pace_ratio",
    help: "Shared upstream pace as a fraction of the configured budget (1 = full; lowered by a throttle, raised back by answers).",
    registers,
    collect() {
      this.set(state().pace);
    },
  });
}

/** Shipping figures read at scrape time; counters follow the shipper's own counts. */
function registerShippingMetrics(shipping: NonNullable<MetricsSources["shipping"]>, registers: Registry[]) {
  new Gauge({
    name: "ura_shipping_episodes",
    help: "Ended episodes by record-shipping state (waiting, uploading, retrying, shipped).",
    labelNames: ["state"],
    registers,
    collect() {
      this.reset();
      for (const state of shipping.states()) this.inc({ state });
    },
  });
  const counters: [keyof ReturnType<typeof shipping.totals>, string, string][] = [
    [
      "attempts_failed",
      "ura_shipping_failed_attempts_total",
      "Shipping attempts that failed (retried with back-off).",
    ],
    [
      "episodes_shipped",
      "ura_shipping_episodes_shipped_total",
      "Episode shipments completed (shipped.json written).",
    ],
    ["objects_uploaded", "ura_shipping_objects_uploaded_total", "Objects uploaded to the bucket."],
    ["bytes_uploaded", "ura_shipping_uploaded_bytes_total", "Bytes uploaded to the bucket."],
    [
      "blobs_already_present",
      "ura_shipping_blobs_deduplicated_total",
      "Blobs found in the bucket already, not uploaded.",
    ],
  ];
  for (const [key, name, help] of counters) {
    let seen = 0;
    new Counter({
      name,
      help,
      registers,
      collect() {
        const now = shipping.totals()[key];
        this.inc(now - seen);
        seen = now;
      },
    });
  }
}
