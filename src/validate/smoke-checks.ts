/**
 * The smoke episode's acceptance checks (docs/design.md, "The smoke episode"), from evidence
 * only: the episode's own records, its status, and what the scripted upstream
 * received. Shared by `ura-sidecar validate` and the end-to-end tests.
 *   observe (image + nonce) → record(nonce) twice in one batch → finish(colour) → text
 */
import { join } from "node:path";
import { readJsonLines } from "../records/jsonl-file.ts";

export type SmokeCheck = { name: string; pass: boolean; evidence: string };

type LedgerLine = {
  type: string;
  callId?: string;
  batchId?: string;
  calls?: { id: string; tool: string; args: unknown }[];
  result?: unknown;
};
type ExchangeLine = { exchange: string; stage: string; status?: string };
type UpstreamRequest = { body: unknown };
type EpisodeStatus = { state: string; failure: unknown; result: unknown };

function hasWebpInUserMessage(body: unknown): boolean {
  const messages = (body as { messages?: { role: string; content: unknown }[] })?.messages ?? [];
  return messages.some(
    (m) =>
      m.role === "user" &&
      Array.isArray(m.content) &&
      JSON.stringify(m.content).includes("data:image/webp;base64,"),
  );
}

export function checkSmokeEpisode(input: {
  recordsDir: string;
  status: EpisodeStatus;
  upstreamRequests: UpstreamRequest[];
}): SmokeCheck[] {
  const ledger = readJsonLines<LedgerLine>(join(input.recordsDir, "ledger.jsonl"));
  const exchanges = readJsonLines<ExchangeLine>(join(input.recordsDir, "exchanges.jsonl"));
  const calls = new Map<string, { tool: string; args: unknown }>();
  for (const e of ledger.entries)
    if (e.type === "registered") for (const c of e.calls ?? []) calls.set(c.id, c);
  const claimed = ledger.entries.filter((e) => e.type === "claimed").map((e) => e.callId as string);
  const claimedTools = claimed.map((id) => calls.get(id)?.tool ?? "?");
  const recordIds = claimed.filter((id) => calls.get(id)?.tool === "record");
  const recordBatches = new Set(
    ledger.entries
      .filter((e) => e.type === "registered" && e.calls?.some((c) => recordIds.includes(c.id)))
      .map((e) => e.batchId),
  );
  const receipts = ledger.entries.filter((e) => e.type === "receipt");
  const finishReceipt = receipts.find((e) => calls.get(e.callId as string)?.tool === "finish")?.result as
    | { submitted?: boolean; correct?: boolean; data?: { submitted?: boolean; correct?: boolean } }
    | undefined;
  const finishData = finishReceipt?.data ?? finishReceipt;
  const exchangeIds = new Set(exchanges.entries.map((e) => e.exchange));
  const statuses = new Map(
    exchanges.entries.filter((e) => e.stage === "status").map((e) => [e.exchange, e.status]),
  );
  const webpRequests = input.upstreamRequests.filter((r) => hasWebpInUserMessage(r.body)).length;
  const pngSent = input.upstreamRequests.some((r) =>
    JSON.stringify(r.body).includes("data:image/png;base64,"),
  );

  return [
    {
      name: "image reached upstream as lossless WebP",
      pass: webpRequests > 0 && !pngSent,
      evidence: `${webpRequests} upstream request(s) carry a WebP data URL in a user message; PNG sent upstream: ${pngSent}`,
    },
    {
      name: "two distinct claimed call ids for the two identical records, in one batch",
      pass: recordIds.length === 2 && new Set(recordIds).size === 2 && recordBatches.size === 1,
      evidence: `record calls claimed: ${JSON.stringify(recordIds)} in batch(es) ${JSON.stringify([...recordBatches])}`,
    },
    {
      name: "call order observe → record → record → finish",
      pass: JSON.stringify(claimedTools) === JSON.stringify(["observe", "record", "record", "finish"]),
      evidence: `claimed in order: ${JSON.stringify(claimedTools)}`,
    },
    {
      name: "finish receipt submitted with the right colour",
      pass: finishData?.submitted === true && finishData?.correct === true,
      evidence: `finish receipt: ${JSON.stringify(finishReceipt ?? null)}`,
    },
    {
      name: "episode finished without provider error",
      pass: input.status.state === "finished" && input.status.failure === null,
      evidence: `state ${input.status.state}, failure ${JSON.stringify(input.status.failure)}`,
    },
    {
      name: "complete records",
      pass:
        ledger.tornTail === undefined &&
        exchanges.tornTail === undefined &&
        exchangeIds.size >= 4 &&
        [...exchangeIds].every((id) => statuses.has(id)) &&
        ledger.entries.filter((e) => e.type === "receipt").length === claimed.length,
      evidence: `${exchangeIds.size} exchanges, statuses ${JSON.stringify(Object.fromEntries(statuses))}; ${claimed.length} claimed, ${receipts.length} receipts`,
    },
  ];
}
