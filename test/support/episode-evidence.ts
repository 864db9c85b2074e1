/**
 * Readers of what an episode leaves behind (tests only): its record lines, the
 * SSE events the sidecar delivered, and the assertions every client's smoke
 * episode shares about them (end-to-end tests).
 */
import { expect } from "bun:test";
import { join } from "node:path";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import { readSse } from "../../src/sse/read-sse.ts";

export type Line = Record<string, unknown>;

/** One of an episode's record files: `ledger`, `exchanges` or `auxiliary` (no lines when it does not exist). */
export function records(recordsDir: string, name: "ledger" | "exchanges" | "auxiliary"): Line[] {
  return readJsonLines<Line>(join(recordsDir, `${name}.jsonl`)).entries;
}

/**
 * The episode's exchange lines once every exchange that began has ended: each
 * exchange with a line has its `status` line. A client may exit while an exchange of
 * its own is still being worked on (a background request it no longer waits for, in
 * a retry's backoff); that exchange is cancelled and records its attempts when it
 * ends, which can be after the client's exit. Waits at most `timeoutMs`, then returns
 * what is there, so an exchange that never ends fails the caller's assertions.
 */
export async function settledExchanges(recordsDir: string, timeoutMs = 15_000): Promise<Line[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = records(recordsDir, "exchanges");
    const begun = new Set(lines.map((l) => l.exchange));
    const ended = new Set(lines.filter((l) => l.stage === "status").map((l) => l.exchange));
    if ([...begun].every((id) => ended.has(id)) || Date.now() >= deadline) return lines;
    await Bun.sleep(100);
  }
}

/** The SSE events of every delivered (streamed) response, in delivery order, from the sidecar's own records. */
export async function deliveredEvents(recordsDir: string): Promise<{ event: string; data: unknown }[]> {
  const events: { event: string; data: unknown }[] = [];
  for (const line of records(recordsDir, "exchanges")) {
    if (line.stage !== "delivered" || typeof line.body !== "string") continue;
    for await (const e of readSse(new Response(line.body).body as ReadableStream<Uint8Array>))
      events.push({ event: e.event ?? "", data: JSON.parse(e.data) });
  }
  return events;
}

/**
 * The smoke episode's four calls (observe, record, record, finish) were each
 * claimed by call id, and the claimed ids are exactly the ids the sidecar
 * delivered, in order; nothing was refused. Returns the ledger lines.
 */
export function expectClaimedByDeliveredIds(recordsDir: string, delivered: string[]): Line[] {
  const ledger = records(recordsDir, "ledger");
  const claimed = ledger.filter((e) => e.type === "claimed");
  expect(claimed.map((e) => e.by)).toEqual(["call_id", "call_id", "call_id", "call_id"]);
  expect(delivered).toHaveLength(4);
  expect(claimed.map((e) => e.callId)).toEqual(delivered);
  expect(ledger.filter((e) => e.type === "refused")).toEqual([]);
  return ledger;
}

/** Every exchange of the episode was delivered; returns the exchange lines and the statuses. */
export function expectEveryExchangeDelivered(recordsDir: string): { exchanges: Line[]; statuses: Line[] } {
  const exchanges = records(recordsDir, "exchanges");
  const statuses = exchanges.filter((l) => l.stage === "status");
  expect(statuses.map((s) => s.status)).toEqual(statuses.map(() => "delivered"));
  return { exchanges, statuses };
}
