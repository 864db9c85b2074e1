/**
 * What the upstream really received and answered, read from an episode's own
 * records (exchanges.jsonl: the upstream_request body as sent on the wire, the
 * upstream_response as received), never from the upstream's side. This is what
 * `validate` judges a real endpoint by: it cannot be asked what it saw.
 *
 * Read through the records' one reader (records/read-records.ts): an image in a
 * record line is either the data URL as sent or a blob reference into the data
 * directory's content-addressed store, which the reader resolves.
 */
import { join } from "node:path";
import { errorMessage } from "../lib/error-message.ts";
import { type EpisodeRecordsView, openRecords } from "../records/read-records.ts";
import { recordedCancel } from "../records/upstream-cancel.ts";

export type UpstreamExchange = { exchange: string; body: unknown; response: unknown };
/** Records live in <data_dir>/episodes/<id>; the blob store is <data_dir>/blobs. */
const recordsOf = (recordsDir: string) => openRecords(join(recordsDir, "..", ".."));

/** An episode's records given its directory; throws RecordFileUnreadable for a damaged file. */
export const readEpisodeRecords = (recordsDir: string): EpisodeRecordsView =>
  recordsOf(recordsDir).readEpisodeDir(recordsDir);

/** Every upstream wire request of the episode, in order, with the response recorded for it. */
export function upstreamExchangesOf(episode: EpisodeRecordsView): UpstreamExchange[] {
  return episode.exchanges.flatMap((exchange) => {
    const request = exchange.line("upstream_request");
    if (!request) return [];
    const answer = exchange.line("upstream_response");
    // A refused answer (invalid arguments, undeclared tool, …) is kept as its error; an
    // exchange cancelled before any answer (the client closed it) has none: not the model's.
    const response =
      !answer || recordedCancel(answer)
        ? null
        : answer.error !== undefined
          ? { error: answer.error }
          : (answer.validated ?? null);
    return [{ exchange: exchange.id, body: request.body, response }];
  });
}

export const readUpstreamExchanges = (recordsDir: string): UpstreamExchange[] =>
  upstreamExchangesOf(readEpisodeRecords(recordsDir));

export type SentImage = { mediaType: string; bytes: Uint8Array | null; role: string };

/**
 * The URL a recorded image_url stands for: the data URL as sent, or the one its blob
 * reference was made from; for a reference whose blob is missing or damaged, why
 * (naming the blob); undefined for anything else.
 */
function sentUrl(
  records: ReturnType<typeof recordsOf>,
  recorded: unknown,
): string | { problem: string } | undefined {
  try {
    const url = records.resolve(recorded);
    return typeof url === "string" ? url : undefined;
  } catch (error) {
    return { problem: errorMessage(error) };
  }
}

/** The images of a Chat Completions request body, with the role of the message carrying each. */
export function imagesSent(body: unknown, recordsDir: string): SentImage[] {
  const records = recordsOf(recordsDir);
  const messages = (body as { messages?: { role: string; content: unknown }[] })?.messages ?? [];
  const images: SentImage[] = [];
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as { type?: string; image_url?: { url?: unknown } }[]) {
      if (part?.type !== "image_url") continue;
      const url = sentUrl(records, part.image_url?.url);
      if (url === undefined) continue;
      const match = typeof url === "string" ? /^data:([^;,]+)(?:;[^;,]+)*;base64,(.*)$/s.exec(url) : null;
      images.push({
        mediaType: typeof url === "string" ? (match?.[1] ?? "(not a data URL)") : `(${url.problem})`,
        bytes: match?.[2] === undefined ? null : new Uint8Array(Buffer.from(match[2], "base64")),
        role: message.role,
      });
    }
  }
  return images;
}

/** A WebP file in its lossless (VP8L) form: RIFF, WEBP, then the VP8L chunk (or VP8X with a VP8L image). */
export function isLosslessWebp(bytes: Uint8Array): boolean {
  const ascii = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));
  if (ascii(0, 4) !== "RIFF" || ascii(8, 12) !== "WEBP") return false;
  const first = ascii(12, 16);
  if (first === "VP8L") return true;
  return first === "VP8X" && Buffer.from(bytes).includes("VP8L");
}
