/**
 * Shared setting-up of the record shipping tests: the compiled binary configured
 * to ship to the test S3 server, stored episodes (with image blobs in the
 * records contract's content-addressed store) written into a data directory the
 * way an earlier process left them, and waiting for an episode's shipping state.
 */
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type S3TestServer, s3AccessKeyId, s3SecretAccessKey } from "./s3-server.ts";
import type { SidecarProcess } from "./sidecar-process.ts";
import { startSidecarProcess } from "./sidecar-process.ts";

export type ShippingStatus = {
  state: string;
  attempts: number;
  last_error: string | null;
  shipped_at: string | null;
  progress: Record<string, number> | null;
};

export async function startShippingSidecar(options: {
  s3: S3TestServer;
  bucket: string;
  dataDir: string;
  shipping?: Record<string, unknown>;
  env?: Record<string, string>;
}): Promise<SidecarProcess> {
  return startSidecarProcess({
    dataDir: options.dataDir,
    config: {
      shipping: {
        settle_ms: 100,
        poll_ms: 50,
        retry: { initial_backoff_ms: 100, max_backoff_ms: 400 },
        endpoint: options.s3.endpoint,
        bucket: options.bucket,
        prefix: "lab/",
        ...options.shipping,
      },
    },
    env: { AWS_ACCESS_KEY_ID: s3AccessKeyId, AWS_SECRET_ACCESS_KEY: s3SecretAccessKey, ...options.env },
  });
}

export const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

/** Writes a blob into <dataDir>/blobs/sha256/<hex>; returns its digest. */
export function writeBlob(dataDir: string, bytes: Uint8Array): string {
  const hex = sha256(bytes);
  mkdirSync(join(dataDir, "blobs", "sha256"), { recursive: true });
  writeFileSync(join(dataDir, "blobs", "sha256", hex), bytes);
  return hex;
}

/** An episode a previous process finished: episode.json and exchange lines referring to the given blobs. */
export function writeStoredEpisode(
  dataDir: string,
  id: string,
  blobs: string[],
  options: { paddingBytes?: number } = {},
): string {
  const dir = join(dataDir, "episodes", id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "episode.json"),
    JSON.stringify({ id, created_at: "2026-01-01T00:00:00.000Z", state: "finished", model: "qwen3-vl-plus" }),
  );
  const lines = blobs.map((hex, i) =>
    JSON.stringify({
      at: "2026-01-01T00:00:01.000Z",
      exchange: `ex_${String(i + 1).padStart(4, "0")}`,
      stage: "client_request",
      body: { image: { $blob: `sha256:${hex}`, media_type: "image/png", bytes: 64 } },
    }),
  );
  // A long episode's exchanges file: large enough for a multipart upload.
  const padding = options.paddingBytes ?? 0;
  for (let written = 0; written < padding; written += 1_000_000) {
    lines.push(
      JSON.stringify({ at: "2026-01-01T00:00:02.000Z", stage: "status", note: "x".repeat(1_000_000) }),
    );
  }
  writeFileSync(join(dir, "exchanges.jsonl"), `${lines.join("\n")}\n`);
  writeFileSync(join(dir, "ledger.jsonl"), "");
  return dir;
}

export async function shippingOf(sidecar: SidecarProcess, id: string): Promise<ShippingStatus | null> {
  const status = (await sidecar.episode(id)) as unknown as { shipping: ShippingStatus | null };
  return status.shipping;
}

export async function waitForShipping(
  sidecar: SidecarProcess,
  id: string,
  until: (s: ShippingStatus) => boolean,
  timeoutMs = 20_000,
): Promise<ShippingStatus> {
  const deadline = Date.now() + timeoutMs;
  let last: ShippingStatus | null = null;
  while (Date.now() < deadline) {
    last = await shippingOf(sidecar, id);
    if (last && until(last)) return last;
    await Bun.sleep(50);
  }
  throw new Error(`episode ${id}: shipping still ${JSON.stringify(last)}\n${sidecar.output().slice(-3000)}`);
}
