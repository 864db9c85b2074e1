/**
 * Record shipping, in the background: an episode that has ended (finished,
 * failed, cancelled, or restored as interrupted after a restart) and whose
 * records have been still for `settle_ms` is planned and shipped; when its
 * records change again (frozen at shutdown, a restart file) it is shipped again,
 * and only the changed objects go up. One episode at a time, never on the path of
 * an exchange or a callback. A failed attempt is logged, shown in the episode
 * status and retried with exponential back-off; local records are never touched
 * (except by the opt-in retention at start-up, for episodes shipped unchanged).
 */
import type { S3Client } from "bun";
import type { ShippingConfig } from "../config/shipping-config.ts";
import { errorMessage } from "../lib/error-message.ts";
import type { Logger } from "../lib/logger.ts";
import { fingerprintOf, listRecordFiles, planEpisode } from "./episode-objects.ts";
import { type ShipProgress, shipEpisode } from "./ship-episode.ts";
import type { UploadJournal } from "./upload-journal.ts";

/** What the shipper needs of an episode. */
export type ShippableEpisode = { id: string; state: string; dir: string };

export type ShippingStatus = {
  /** waiting: ended, records not yet still; uploading; retrying: the last attempt failed; shipped. */
  state: "waiting" | "uploading" | "retrying" | "shipped";
  attempts: number;
  last_error: string | null;
  next_attempt_at: string | null;
  shipped_at: string | null;
  progress: ShipProgress | null;
};

type Tracked = ShippingStatus & { nextAttemptMs: number; failures: number };

export type ShipperDeps = {
  config: ShippingConfig;
  s3: S3Client;
  journal: UploadJournal;
  dataDir: string;
  episodes: () => ShippableEpisode[];
  logger: Logger;
  clock: () => number;
};

/** Counts since start-up, for /metrics. */
export type ShippingTotals = {
  attempts_failed: number;
  episodes_shipped: number;
  objects_uploaded: number;
  bytes_uploaded: number;
  blobs_already_present: number;
};

export const noShippingTotals: ShippingTotals = {
  attempts_failed: 0,
  episodes_shipped: 0,
  objects_uploaded: 0,
  bytes_uploaded: 0,
  blobs_already_present: 0,
};

export function backoffMs(retry: ShippingConfig["retry"], failures: number): number {
  return Math.min(retry.max_backoff_ms, retry.initial_backoff_ms * 2 ** Math.max(0, failures - 1));
}

/** Uploads each ended episode's records, retrying with back-off, resumable across restarts. */
export interface Shipper {
  start(): void;
  /** Stops looking for work; an upload under way is left to finish or to be resumed by the next start. */
  stop(): void;
  /** Resolves when the pass under way (if any) ends. */
  idle(): Promise<void>;
  /** The shipping state of every ended episode seen (for /metrics). */
  states(): ShippingStatus["state"][];
  /** The counts since start-up (for /metrics). */
  totals(): ShippingTotals;
  /** The episode's shipping status; null while it is running or was never seen ended. */
  status(id: string): ShippingStatus | null;
}

export function createShipper(deps: ShipperDeps): Shipper {
  const { config, journal, logger, clock } = deps;
  const tracked = new Map<string, Tracked>();
  const totals: ShippingTotals = { ...noShippingTotals };
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let current: Promise<void> | undefined;
  const iso = (ms: number) => new Date(ms).toISOString();

  function track(id: string): Tracked {
    let entry = tracked.get(id);
    if (!entry) {
      const shipped = journal.shipped(id);
      entry = {
        state: "waiting",
        attempts: 0,
        last_error: null,
        next_attempt_at: null,
        shipped_at: shipped?.at ?? null,
        progress: null,
        nextAttemptMs: 0,
        failures: 0,
      };
      tracked.set(id, entry);
    }
    return entry;
  }

  async function shipOne(
    episode: ShippableEpisode,
    entry: Tracked,
    fingerprint: string,
    files: { name: string; size: number }[],
  ) {
    entry.state = "uploading";
    entry.attempts += 1;
    const progress: ShipProgress = {
      objects_total: 0,
      objects_confirmed: 0,
      objects_uploaded: 0,
      bytes_uploaded: 0,
      blobs_already_present: 0,
    };
    entry.progress = progress;
    const counted = () => {
      totals.objects_uploaded += progress.objects_uploaded;
      totals.bytes_uploaded += progress.bytes_uploaded;
      totals.blobs_already_present += progress.blobs_already_present;
    };
    try {
      const plan = await planEpisode({
        dataDir: deps.dataDir,
        episode: episode.id,
        dir: episode.dir,
        prefix: config.prefix,
        files,
      });
      if (plan.missingBlobs.length > 0) {
        logger.warn("shipping: record lines refer to blobs missing from the data directory", {
          episode: episode.id,
          missing_blobs: plan.missingBlobs,
        });
      }
      const fact = await shipEpisode({
        s3: deps.s3,
        journal,
        prefix: config.prefix,
        episode: episode.id,
        state: episode.state,
        source: config.source,
        plan,
        fingerprint,
        partSizeBytes: config.part_size_bytes,
        concurrency: config.concurrency,
        clock,
        progress,
      });
      Object.assign(entry, {
        state: "shipped",
        last_error: null,
        next_attempt_at: null,
        shipped_at: fact.at,
      });
      entry.failures = 0;
      totals.episodes_shipped += 1;
      counted();
      logger.info("shipping: episode shipped", { episode: episode.id, ...progress });
    } catch (error) {
      counted();
      totals.attempts_failed += 1;
      entry.failures += 1;
      const wait = backoffMs(config.retry, entry.failures);
      entry.nextAttemptMs = clock() + wait;
      Object.assign(entry, {
        state: "retrying",
        last_error: errorMessage(error),
        next_attempt_at: iso(entry.nextAttemptMs),
      });
      logger.error("shipping: attempt failed; local records kept, retrying", {
        episode: episode.id,
        attempt: entry.attempts,
        error: entry.last_error,
        retry_in_ms: wait,
      });
    }
  }

  /** One pass: the first ended, settled, unshipped episode due for an attempt is shipped. */
  async function pass(): Promise<void> {
    for (const episode of deps.episodes()) {
      if (stopped) return;
      if (episode.state === "running") continue;
      const entry = track(episode.id);
      if (clock() < entry.nextAttemptMs) continue;
      const files = await listRecordFiles(episode.dir).catch(() => []);
      if (files.length === 0) continue;
      const fingerprint = fingerprintOf(files);
      if (journal.shipped(episode.id)?.fingerprint === fingerprint) {
        entry.state = "shipped";
        continue;
      }
      const lastChange = Math.max(...files.map((f) => f.mtimeMs));
      if (clock() - lastChange < config.settle_ms) {
        if (entry.state !== "retrying") entry.state = "waiting";
        continue;
      }
      await shipOne(episode, entry, fingerprint, files);
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      current = pass()
        .catch((error) => logger.error("shipping: pass failed", { message: errorMessage(error) }))
        .finally(() => {
          current = undefined;
          schedule();
        });
    }, config.poll_ms);
    timer.unref?.();
  }

  return {
    start() {
      stopped = false;
      schedule();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
    idle: () => current ?? Promise.resolve(),
    states: () => [...tracked.values()].map((entry) => entry.state),
    totals: () => ({ ...totals }),
    status(id) {
      // Shipped by an earlier process, not looked at by this one yet: the journal says so.
      const entry =
        tracked.get(id) ?? (journal.shipped(id) ? { ...track(id), state: "shipped" as const } : undefined);
      if (!entry) return null;
      const { nextAttemptMs: _n, failures: _f, ...status } = entry;
      return status;
    },
  };
}
