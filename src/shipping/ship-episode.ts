/**
 * Ships one planned episode: each object the journal does not already confirm is
 * uploaded (a blob the bucket already holds under its digest is only confirmed,
 * not sent again), its size checked by a HEAD, and journalled; once every object
 * is confirmed, `shipped.json` (the list of objects with their SHA-256) is written
 * last, so a reader of the bucket knows an episode is complete when it exists.
 * Any failure throws: the caller retries the whole episode later, and what was
 * confirmed before is not uploaded again.
 */
import type { S3Client } from "bun";
import { errorMessage } from "../lib/error-message.ts";
import type { EpisodePlan, PlannedObject } from "./episode-objects.ts";
import { digestFile, episodeKey } from "./episode-objects.ts";
import type { UploadJournal } from "./upload-journal.ts";

export type ShipProgress = {
  objects_total: number;
  objects_confirmed: number;
  /** Uploaded by this attempt. */
  objects_uploaded: number;
  bytes_uploaded: number;
  /** Blobs found in the bucket already (same digest): confirmed without uploading. */
  blobs_already_present: number;
};

export type ShipRequest = {
  s3: S3Client;
  journal: UploadJournal;
  prefix: string;
  episode: string;
  state: string;
  source: string | undefined;
  plan: EpisodePlan;
  fingerprint: string;
  partSizeBytes: number;
  concurrency: number;
  clock: () => number;
  progress: ShipProgress;
};

export class ShippingError extends Error {
  override name = "ShippingError";
}

/** The S3 error code and message, naming the object (never a credential: Bun's errors carry none). */
function describeS3Error(key: string, error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = errorMessage(error) ?? String(error);
  return `${key}: ${typeof code === "string" ? `${code}: ` : ""}${message}`;
}

async function statSize(s3: S3Client, key: string): Promise<number | undefined> {
  try {
    return (await s3.stat(key)).size;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "NoSuchKey" || code === "NotFound" || /not ?found|404/i.test(errorMessage(error))) {
      return undefined;
    }
    throw error;
  }
}

async function shipObject(request: ShipRequest, object: PlannedObject): Promise<void> {
  const { s3, journal, progress } = request;
  if (journal.has(object.key, object.sha256)) {
    progress.objects_confirmed += 1;
    return;
  }
  try {
    if (object.kind === "blob") {
      if ((await statSize(s3, object.key)) === object.size) {
        journal.confirmObject(object.key, object.sha256, object.size);
        progress.blobs_already_present += 1;
        progress.objects_confirmed += 1;
        return;
      }
      // A content-addressed key must never hold other bytes: check the local file against its name.
      const { sha256 } = await digestFile(object.path, object.size);
      if (sha256 !== object.sha256) {
        throw new ShippingError(`${object.path}: blob content does not match its name (sha256 ${sha256})`);
      }
    }
    await s3.write(object.key, Bun.file(object.path).slice(0, object.size), {
      partSize: request.partSizeBytes,
      queueSize: 4,
      type: object.kind === "blob" ? "application/octet-stream" : contentType(object.key),
    });
    const confirmed = await statSize(s3, object.key);
    if (confirmed !== object.size) {
      throw new ShippingError(
        `${object.key}: the bucket holds ${confirmed ?? "no"} bytes after the upload, expected ${object.size}`,
      );
    }
  } catch (error) {
    if (error instanceof ShippingError) throw error;
    throw new ShippingError(describeS3Error(object.key, error));
  }
  journal.confirmObject(object.key, object.sha256, object.size);
  progress.objects_uploaded += 1;
  progress.bytes_uploaded += object.size;
  progress.objects_confirmed += 1;
}

function contentType(key: string): string {
  return key.endsWith(".json") ? "application/json" : "application/x-ndjson";
}

export async function shipEpisode(request: ShipRequest) {
  const { plan, progress } = request;
  progress.objects_total = plan.objects.length + 1;
  const queue = [...plan.objects];
  const worker = async () => {
    for (let object = queue.shift(); object; object = queue.shift()) await shipObject(request, object);
  };
  await Promise.all(Array.from({ length: Math.min(request.concurrency, queue.length || 1) }, worker));

  const manifest = {
    episode: request.episode,
    state: request.state,
    source: request.source ?? null,
    shipped_at: new Date(request.clock()).toISOString(),
    objects: plan.objects.map(({ key, sha256, size, kind }) => ({ key, sha256, size, kind })),
    missing_blobs: plan.missingBlobs,
  };
  const key = episodeKey(request.prefix, request.episode, "shipped.json");
  const body = JSON.stringify(manifest, null, 2);
  try {
    await request.s3.write(key, body, { type: "application/json" });
    const size = await statSize(request.s3, key);
    if (size !== Buffer.byteLength(body)) throw new ShippingError(`${key}: not confirmed after the upload`);
  } catch (error) {
    if (error instanceof ShippingError) throw error;
    throw new ShippingError(describeS3Error(key, error));
  }
  progress.objects_confirmed += 1;
  return request.journal.confirmShipped({
    episode: request.episode,
    fingerprint: request.fingerprint,
    objects: progress.objects_total,
    bytes: plan.objects.reduce((sum, o) => sum + o.size, 0),
  });
}
