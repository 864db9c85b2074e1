/**
 * The smoke episode's acceptance checks (docs/design.md, "The smoke episode"), from evidence
 * only: the episode's own records (the upstream wire requests and responses, the
 * ledger, the receipts) and its status — the same whether the upstream is the
 * scripted one or a real endpoint that cannot be asked what it saw.
 *   observe (image + nonce) → record(nonce) twice in one batch → finish(colour) → text
 * The records are read through the records' one reader (records/read-records.ts), so
 * damage is judged the way every other reader sees it, and named in the evidence: a
 * torn last line (a crash mid-write) fails "complete records", the whole lines before
 * it still count; a line that is not JSON before the end makes the file unreadable and
 * fails every check that reads records; a frame whose blob is missing or damaged fails
 * the image check naming the blob.
 */
import type { EpisodeStatus } from "../episodes/episode-status.ts";
import { type EpisodeRecordsView, RecordFileUnreadable } from "../records/read-records.ts";
import {
  imagesSent,
  isLosslessWebp,
  readEpisodeRecords,
  type UpstreamExchange,
  upstreamExchangesOf,
} from "./upstream-evidence.ts";

export type SmokeCheck = { name: string; pass: boolean; evidence: string };

/** The episode's records, read once through the records' reader, and what the upstream saw in them. */
export type SmokeRecords = {
  recordsDir: string;
  /** Undefined when a record file cannot be read at all (`unreadable` says which and where). */
  episode: EpisodeRecordsView | undefined;
  upstream: UpstreamExchange[];
  unreadable?: string;
};

export type LedgerLine = {
  type: string;
  callId?: string;
  batchId?: string;
  calls?: { id: string; tool: string; args?: unknown }[];
  result?: unknown;
};

/** Reads the records; a file with a line that is not JSON before its end is reported, not thrown. */
export function readSmokeRecords(recordsDir: string): SmokeRecords {
  try {
    const episode = readEpisodeRecords(recordsDir);
    return { recordsDir, episode, upstream: upstreamExchangesOf(episode) };
  } catch (error) {
    if (!(error instanceof RecordFileUnreadable)) throw error;
    return { recordsDir, episode: undefined, upstream: [], unreadable: error.message };
  }
}

export const ledgerLines = (records: SmokeRecords): LedgerLine[] =>
  (records.episode?.ledger ?? []).map((line) => line.value as LedgerLine);

export function checkSmokeEpisode(
  records: SmokeRecords,
  status: Pick<EpisodeStatus, "state" | "failure">,
): SmokeCheck[] {
  const ledger = ledgerLines(records);
  const exchanges = records.episode?.exchanges ?? [];
  const tornTails = records.episode?.tornTails ?? {};
  const calls = new Map<string, { tool: string; args?: unknown }>();
  for (const e of ledger) if (e.type === "registered") for (const c of e.calls ?? []) calls.set(c.id, c);
  const claimed = ledger.filter((e) => e.type === "claimed").map((e) => e.callId as string);
  const claimedTools = claimed.map((id) => calls.get(id)?.tool ?? "?");
  const recordIds = claimed.filter((id) => calls.get(id)?.tool === "record");
  const recordBatches = new Set(
    ledger
      .filter((e) => e.type === "registered" && e.calls?.some((c) => recordIds.includes(c.id)))
      .map((e) => e.batchId),
  );
  const receipts = ledger.filter((e) => e.type === "receipt");
  const finishReceipt = receipts.find((e) => calls.get(e.callId as string)?.tool === "finish")?.result as
    | { submitted?: boolean; correct?: boolean; data?: { submitted?: boolean; correct?: boolean } }
    | undefined;
  const finishData = finishReceipt?.data ?? finishReceipt;
  const statuses = new Map(
    exchanges.flatMap((e) => {
      const status = e.line("status")?.status;
      return status ? [[e.id, status] as const] : [];
    }),
  );
  const torn = ["ledger.jsonl", "exchanges.jsonl"].filter((file) => tornTails[file] !== undefined);
  const sent = records.upstream.map((r) => imagesSent(r.body, records.recordsDir));
  const webpRequests = sent.filter((images) =>
    images.some(
      (i) => i.role === "user" && i.mediaType === "image/webp" && i.bytes && isLosslessWebp(i.bytes),
    ),
  ).length;
  const otherImages = sent
    .flat()
    .filter((i) => i.mediaType !== "image/webp" || !i.bytes || !isLosslessWebp(i.bytes));

  const checks: SmokeCheck[] = [
    {
      name: "image reached upstream as lossless WebP",
      pass: webpRequests > 0 && otherImages.length === 0,
      evidence: `${webpRequests} of ${records.upstream.length} recorded upstream request(s) carry a lossless (VP8L) WebP in a user message; other images sent: ${JSON.stringify(otherImages.map((i) => i.mediaType))}`,
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
      pass: status.state === "finished" && status.failure === null,
      evidence: `state ${status.state}, failure ${JSON.stringify(status.failure)}`,
    },
    {
      name: "complete records",
      pass:
        torn.length === 0 &&
        exchanges.length >= 4 &&
        exchanges.every((e) => statuses.has(e.id)) &&
        receipts.length === claimed.length,
      evidence: `${torn.map((file) => `${file}: torn last line (${tornTails[file]?.length} chars); `).join("")}${exchanges.length} exchanges, statuses ${JSON.stringify(Object.fromEntries(statuses))}; ${claimed.length} claimed, ${receipts.length} receipts`,
    },
  ];
  if (records.unreadable === undefined) return checks;
  // Nothing the records would show can pass; the episode's state comes from its status.
  return checks.map((c) =>
    c.name.startsWith("episode finished")
      ? c
      : { ...c, pass: false, evidence: `records unreadable: ${records.unreadable}; ${c.evidence}` },
  );
}
