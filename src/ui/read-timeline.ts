/**
 * An episode's records arranged for the timeline page: exchanges in order with
 * their stages and timings, the images on each side, the context decision, the
 * error in full, and the tool calls each exchange delivered with every ledger
 * transition. Reads the files as they are on disk through the records' reader, so
 * a page shows what the records say (a torn last line, from a crash mid-write or
 * a line being written, is left out).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { HubUsage } from "../hub/schema.ts";
import type { ExchangeLineRead } from "../records/exchange-lines.ts";
import type { RecordLine, Records } from "../records/read-records.ts";
import { type RecordedCancel, recordedCancel } from "../records/upstream-cancel.ts";
import { type FoundImage, findImages } from "./find-images.ts";

export type Line = Record<string, unknown>;

export type TimelineExchange = {
  id: string;
  protocol: string;
  path: string;
  stages: { stage: string; at: string; ms: number | undefined }[];
  clientImages: FoundImage[];
  upstreamImages: FoundImage[];
  decision: ExchangeLineRead<"after_context">["decision"];
  imageStats: ExchangeLineRead<"upstream_request">["images"];
  attempts: Attempts;
  /** The upstream's usage of the validated answer (prompt, cached and cache-written tokens). */
  usage: Partial<HubUsage> | undefined;
  /** What the exchange cost by the price table (docs/pricing.md); undefined without one. */
  cost: ExchangeLineRead<"upstream_response">["cost"];
  /** The exchange's time in the shared upstream queue, and its throttled and retried attempts. */
  upstream: UpstreamWaits;
  /** Where and why the exchange was cancelled before it had an answer; undefined when it was not. */
  cancelled: RecordedCancel | undefined;
  status: ExchangeLineRead<"status"> | undefined;
  calls: TimelineCall[];
};

type Attempts = NonNullable<ExchangeLineRead<"upstream_response">["attempts"]>;
export type UpstreamWaits = { queueMs: number; throttled: number; retries: number };

/** Totals over an exchange's upstream attempts, as recorded in its upstream_response line. */
export function summarizeAttempts(attempts: Attempts): UpstreamWaits {
  return {
    queueMs: attempts.reduce((ms, a) => ms + (a.queue_ms ?? 0), 0),
    throttled: attempts.filter((a) => a.status === 429).length,
    retries: Math.max(0, attempts.length - 1),
  };
}

export type TimelineCall = { id: string; tool: string; modelName: string; args: unknown; events: Line[] };

export type Timeline = {
  exchanges: TimelineExchange[];
  refusals: Line[];
  otherLedger: Line[];
  auxiliary: Line[];
  /** Bytes of the record files: changes whenever anything was appended (live updates). */
  stamp: number;
};

function fileBytes(path: string): number {
  return existsSync(path) ? Bun.file(path).size : 0;
}

export function recordsStamp(dir: string): number {
  return ["exchanges.jsonl", "ledger.jsonl", "auxiliary.jsonl", "episode.json"].reduce(
    (n, name) => n + fileBytes(join(dir, name)),
    0,
  );
}

/** The nth image of one side of one exchange (for the image URLs of the page). */
export function exchangeImage(
  records: Records,
  dir: string,
  exchange: string,
  side: "client" | "upstream",
  index: number,
): FoundImage | undefined {
  const stage = side === "client" ? "client_request" : "upstream_request";
  const line = records
    .readEpisodeDir(dir)
    .exchanges.find((e) => e.id === exchange)
    ?.stage(stage);
  return line ? findImages(line.value.body)[index] : undefined;
}

export function readTimeline(records: Records, dir: string): Timeline {
  const view = records.readEpisodeDir(dir);
  const values = (lines: RecordLine[]): Line[] => lines.map((line) => line.value);
  const ledger = values(view.ledger);
  const callEvents = new Map<string, Line[]>();
  for (const event of ledger)
    if (typeof event.callId === "string")
      callEvents.set(event.callId, [...(callEvents.get(event.callId) ?? []), event]);
  const batches = new Map<string, Line[]>();
  for (const event of ledger) {
    // A batch is named by the exchange that delivers it (older journals also say exchangeId).
    const exchange = event.exchangeId ?? event.batchId;
    if (event.type === "registered" && typeof exchange === "string")
      batches.set(exchange, [...(batches.get(exchange) ?? []), event]);
  }
  const batchEvents = (batchId: unknown) =>
    ledger.filter((e) => e.batchId === batchId && e.type !== "registered");

  const exchanges = view.exchanges.map((exchange): TimelineExchange => {
    const { id } = exchange;
    let previous: number | undefined;
    const stages = values(exchange.lines).map((l) => {
      const at = Date.parse(String(l.at));
      const ms = previous === undefined ? undefined : at - previous;
      previous = at;
      return { stage: String(l.stage), at: String(l.at), ms };
    });
    const clientRequest = exchange.line("client_request");
    const upstreamRequest = exchange.line("upstream_request");
    const upstreamResponse = exchange.line("upstream_response");
    const attempts = upstreamResponse?.attempts ?? [];
    const calls = (batches.get(id) ?? []).flatMap((registered) =>
      ((registered.calls ?? []) as Line[]).map((call) => ({
        id: String(call.id),
        tool: String(call.tool),
        modelName: String(call.modelName),
        args: call.args,
        events: [
          registered,
          ...batchEvents(registered.batchId),
          ...(callEvents.get(String(call.id)) ?? []),
        ].sort((a, b) => Number(a.at) - Number(b.at)),
      })),
    );
    return {
      id,
      protocol: clientRequest?.protocol ?? "",
      path: clientRequest?.path ?? "",
      stages,
      clientImages: findImages(clientRequest?.body),
      upstreamImages: findImages(upstreamRequest?.body),
      decision: exchange.line("after_context")?.decision,
      imageStats: upstreamRequest?.images,
      attempts,
      usage: upstreamResponse?.validated?.usage,
      cost: upstreamResponse?.cost,
      upstream: summarizeAttempts(attempts),
      cancelled: recordedCancel(upstreamResponse),
      status: exchange.line("status"),
      calls,
    };
  });
  return {
    exchanges,
    refusals: ledger.filter((e) => e.type === "refused"),
    otherLedger: ledger.filter((e) => ["admission_closed", "interrupted"].includes(String(e.type))),
    auxiliary: values(view.auxiliary),
    stamp: recordsStamp(dir),
  };
}
