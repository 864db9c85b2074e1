/**
 * What the upstream really received and answered, read from an episode's own
 * records (exchanges.jsonl: the upstream_request body as sent on the wire, the
 * upstream_response as received), never from the upstream's side. This is what
 * `validate` judges a real endpoint by: it cannot be asked what it saw.
 *
 * An image in a record line is either the data URL as sent or a blob reference
 * (`{"$blob":"sha256:<hex>","media_type":…}`) into the data directory's
 * content-addressed store; both are read.
 */
import { join } from "node:path";
import { createBlobStore } from "../records/blob-store.ts";
import { readJsonLines } from "../records/jsonl-file.ts";

export type UpstreamExchange = { exchange: string; body: unknown; response: unknown };
type ExchangeLine = {
  exchange: string;
  stage: string;
  body?: unknown;
  raw?: unknown;
  validated?: unknown;
  error?: string;
};

/** Every upstream wire request of the episode, in order, with the response recorded for it. */
export function readUpstreamExchanges(recordsDir: string): UpstreamExchange[] {
  const lines = readJsonLines<ExchangeLine>(join(recordsDir, "exchanges.jsonl")).entries;
  const out: UpstreamExchange[] = [];
  for (const line of lines) {
    if (line.stage === "upstream_request")
      out.push({ exchange: line.exchange, body: line.body, response: null });
    if (line.stage === "upstream_response") {
      const request = out.findLast((r) => r.exchange === line.exchange);
      // A refused answer (invalid arguments, undeclared tool, …) is kept as its error.
      if (request)
        request.response = line.error !== undefined ? { error: line.error } : (line.validated ?? null);
    }
  }
  return out;
}

export type SentImage = { mediaType: string; bytes: Uint8Array | null; role: string };

type Blob = { $blob: string; media_type?: string };
function isBlob(value: unknown): value is Blob {
  return typeof value === "object" && value !== null && typeof (value as Blob).$blob === "string";
}

function blobBytes(recordsDir: string, ref: string): Uint8Array | null {
  const digest = /^sha256:([0-9a-f]{64})$/.exec(ref)?.[1];
  if (!digest) return null;
  // Records live in <data_dir>/episodes/<id>; the store in <data_dir>/blobs/sha256/<hex>.
  const store = createBlobStore(join(recordsDir, "..", ".."));
  return store.has(digest) ? store.read(digest) : null;
}

/** The images of a Chat Completions request body, with the role of the message carrying each. */
export function imagesSent(body: unknown, recordsDir: string): SentImage[] {
  const messages = (body as { messages?: { role: string; content: unknown }[] })?.messages ?? [];
  const images: SentImage[] = [];
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as { type?: string; image_url?: { url?: unknown } }[]) {
      if (part?.type !== "image_url") continue;
      const url = part.image_url?.url;
      if (typeof url === "string") {
        const match = /^data:([^;,]+)(?:;[^;,]+)*;base64,(.*)$/s.exec(url);
        images.push({
          mediaType: match?.[1] ?? "(not a data URL)",
          bytes: match?.[2] === undefined ? null : new Uint8Array(Buffer.from(match[2], "base64")),
          role: message.role,
        });
      } else if (isBlob(url)) {
        images.push({
          mediaType: url.media_type ?? "(unknown)",
          bytes: blobBytes(recordsDir, url.$blob),
          role: message.role,
        });
      }
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
