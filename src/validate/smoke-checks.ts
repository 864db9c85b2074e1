/**
 * The smoke episode's acceptance checks (docs/design.md, "The smoke episode"), from evidence
 * only: the episode's own records (the upstream wire requests and responses, the
 * ledger, the receipts) and its status — the same whether the upstream is the
 * scripted one or a real endpoint that cannot be asked what it saw.
 *   observe (image + nonce) → record(nonce) twice in one batch → finish(colour) → text
 */
import { join } from "node:path";
import type { EpisodeStatus } from "../episodes/episode-status.ts";
import { readJsonLines } from "../records/jsonl-file.ts";
import { imagesSent, isLosslessWebp, type UpstreamExchange } from "./upstream-evidence.ts";

export type SmokeCheck = { name: string; pass: boolean; evidence: string };

type LedgerLine = {
  type: string;
  callId?: string;
  batchId?: string;
  calls?: { id: string; tool: string; args: unknown }[];
  result?: unknown;
};
type ExchangeLine = { exchange: string; stage: string; status?: string };

export function checkSmokeEpisode(input: {
  recordsDir: string;
  status: EpisodeStatus;
  upstream: UpstreamExchange[];
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
  const sent = input.upstream.map((r) => imagesSent(r.body, input.recordsDir));
  const webpRequests = sent.filter((images) =>
    images.some(
      (i) => i.role === "user" && i.mediaType === "image/webp" && i.bytes && isLosslessWebp(i.bytes),
    ),
  ).length;
  const otherImages = sent
    .flat()
    .filter((i) => i.mediaType !== "image/webp" || !i.bytes || !isLosslessWebp(i.bytes));

  return [
    {
      name: "image reached upstream as lossless WebP",
      pass: webpRequests > 0 && otherImages.length === 0,
      evidence: `${webpRequests} of ${input.upstream.length} recorded upstream request(s) carry a lossless (VP8L) WebP in a user message; other images sent: ${JSON.stringify(otherImages.map((i) => i.mediaType))}`,
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
