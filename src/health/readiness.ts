/**
 * Readiness for container probes: the sidecar is ready when its image codecs are
 * warmed, its data directory takes a write, and it is not draining. Each check
 * answers a reason when it fails, so a 503 says which one (an operator reading
 * `kubectl describe` sees "data directory not writable: EROFS …", not just 503).
 */
import { unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Resolves undefined when ready, else the reason it is not. */
export type ReadinessCheck = () => Promise<string | undefined> | string | undefined;

export function codecsWarmedCheck(isWarmed: () => boolean): ReadinessCheck {
  return () => (isWarmed() ? undefined : "image codecs are still warming up");
}

export function notDrainingCheck(isDraining: () => boolean): ReadinessCheck {
  return () => (isDraining() ? "draining: shutdown in progress, new exchanges are refused" : undefined);
}

/**
 * Writes and removes a small probe file: a read-only mount, a full disk or a
 * directory removed under the process shows up here before an exchange fails on it.
 */
export function dataDirWritableCheck(dataDir: string): ReadinessCheck {
  const probe = join(dataDir, `.ready-probe-${process.pid}`);
  return async () => {
    try {
      await writeFile(probe, "ready\n");
      await unlink(probe);
      return undefined;
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      return `data directory not writable: ${e.code ?? "error"} ${dataDir}`;
    }
  };
}

/** Runs every check; the reasons of those that failed, in check order. */
export async function notReadyReasons(checks: readonly ReadinessCheck[]): Promise<string[]> {
  const results = await Promise.all(checks.map((check) => check()));
  return results.filter((reason): reason is string => reason !== undefined);
}
