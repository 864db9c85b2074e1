/**
 * Record shipping of the compiled binary against a real S3-compatible server
 * (s3rver with Signature V4 checking): an ended episode's records and the blobs
 * they refer to land in the bucket byte for byte; a restart ships only what
 * changed; a blob already in the bucket is not sent again; kill -9 in the middle
 * of an upload resumes without re-sending what was confirmed; a bucket that
 * refuses and wrong credentials are retried, visible in the episode status and
 * the log, and never touch the local records. Needs `make build`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import { startS3Server } from "../support/s3-server.ts";
import {
  sha256,
  shippingOf,
  startShippingSidecar,
  waitForShipping,
  writeBlob,
  writeStoredEpisode,
} from "../support/shipping-kit.ts";
import { controlPassword, type SidecarProcess } from "../support/sidecar-process.ts";
import { sendSmokeMessage } from "../support/smoke-message.ts";

const s3 = await startS3Server(["records", "other"]);
afterAll(() => s3.close());

const newDataDir = () => mkdtempSync(join(tmpdir(), "ura-ship-data-"));
const frame = (seed: number, size = 2048) => new Uint8Array(size).map((_, i) => (i * 31 + seed) % 251);

/**
 * Every local record file of the episode is in the bucket with the same bytes, and
 * shipped.json lists them — once the bucket has caught up: episode.json may be
 * rewritten in the background just after a pass shipped it (a temporary file, never
 * shipped, then a rename), and the next pass ships the change.
 */
async function expectEpisodeInBucket(bucket: string, dataDir: string, id: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return await expectEpisodeInBucketNow(bucket, dataDir, id);
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await Bun.sleep(100);
    }
  }
}

async function expectEpisodeInBucketNow(bucket: string, dataDir: string, id: string) {
  const dir = join(dataDir, "episodes", id);
  const local = readdirSync(dir)
    .filter((name) => !name.endsWith(".tmp"))
    .sort();
  const listed = (await s3.list(bucket, `lab/episodes/${id}/`)).map((o) => o.key);
  expect(listed).toEqual([...local, "shipped.json"].sort().map((f) => `lab/episodes/${id}/${f}`));
  for (const name of local) {
    const remote = await s3.get(bucket, `lab/episodes/${id}/${name}`);
    expect(sha256(remote ?? new Uint8Array())).toBe(sha256(readFileSync(join(dir, name))));
  }
  const manifest = JSON.parse(
    new TextDecoder().decode(await s3.get(bucket, `lab/episodes/${id}/shipped.json`)),
  );
  for (const object of manifest.objects as { key: string; sha256: string; size: number }[]) {
    const remote = await s3.get(bucket, object.key);
    expect({ key: object.key, sha256: sha256(remote ?? new Uint8Array()) }).toEqual({
      key: object.key,
      sha256: object.sha256,
    });
  }
  return manifest as {
    episode: string;
    state: string;
    source: string;
    objects: { key: string; kind: string }[];
  };
}

/** The sidecar's /metrics as series → value (series with their labels, as exposed). */
async function metricValues(sidecar: SidecarProcess): Promise<Map<string, number>> {
  const res = await fetch(`${sidecar.url}/metrics`, {
    headers: { authorization: `Bearer ${controlPassword}` },
  });
  expect(res.status).toBe(200);
  const values = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    const match = /^(ura_shipping_\S+) (\S+)$/.exec(line);
    if (match) values.set(match[1] as string, Number(match[2]));
  }
  return values;
}

describe("records shipped to an S3-compatible bucket", () => {
  test("a live episode is shipped once it ends; after a restart only what changed goes up", async () => {
    const dataDir = newDataDir();
    const first = await startShippingSidecar({ s3, bucket: "records", dataDir });
    const episode = await first.createEpisode({});
    const res = await sendSmokeMessage(episode);
    expect(res.status).toBe(200);
    expect(await shippingOf(first, episode.id)).toBeNull(); // running: nothing shipped yet
    expect((await first.control(`/episodes/${episode.id}/cancel`, { method: "POST" })).status).toBe(200);
    const shipped = await waitForShipping(first, episode.id, (s) => s.state === "shipped");
    expect(shipped.last_error).toBeNull();
    const manifest = await expectEpisodeInBucket("records", dataDir, episode.id);
    expect(manifest.state).toBe("failed");
    expect(manifest.source).toBe(hostname()); // no shipping.source: the host name (a pod's name)
    const exchangesKey = `lab/episodes/${episode.id}/exchanges.jsonl`;
    expect(s3.putCount("records", exchangesKey)).toBe(1);

    expect(await first.stop("SIGTERM")).toBe(0);
    const second = await startShippingSidecar({ s3, bucket: "records", dataDir });
    // frozen.json (clean shutdown) and the restart file are new: shipped again, and only they (plus shipped.json).
    await waitForShipping(
      second,
      episode.id,
      (s) => s.state === "shipped" && (s.progress?.objects_uploaded ?? 0) > 0,
    );
    await expectEpisodeInBucket("records", dataDir, episode.id);
    expect(s3.putCount("records", exchangesKey)).toBe(1);
    expect(s3.putCount("records", `lab/episodes/${episode.id}/frozen.json`)).toBe(1);
    expect(await second.stop("SIGTERM")).toBe(0);
  }, 60_000);

  test("blobs shared by episodes, or already in the bucket, are uploaded once or not at all", async () => {
    const dataDir = newDataDir();
    const [b1, b2, b3] = [frame(1), frame(2), frame(3)].map((bytes) => writeBlob(dataDir, bytes)) as [
      string,
      string,
      string,
    ];
    writeStoredEpisode(dataDir, "ep_dedupea", [b1, b2]);
    writeStoredEpisode(dataDir, "ep_dedupeb", [b2, b3, b2]);
    // b3 reached the bucket from another robot earlier.
    const preloaded = new Bun.S3Client({
      endpoint: s3.endpoint,
      bucket: "other",
      accessKeyId: "S3RVER",
      secretAccessKey: "S3RVER",
    });
    await preloaded.write(`lab/blobs/sha256/${b3}`, frame(3));
    const sidecar = await startShippingSidecar({ s3, bucket: "other", dataDir });
    await waitForShipping(sidecar, "ep_dedupea", (s) => s.state === "shipped");
    const b = await waitForShipping(sidecar, "ep_dedupeb", (s) => s.state === "shipped");
    // b3 was preloaded: found by its digest, not sent (b2, shared with episode a, is confirmed by the journal).
    expect(b.progress?.blobs_already_present).toBe(1);
    for (const id of ["ep_dedupea", "ep_dedupeb"]) await expectEpisodeInBucket("other", dataDir, id);
    expect(s3.putCount("other", `lab/blobs/sha256/${b1}`)).toBe(1);
    expect(s3.putCount("other", `lab/blobs/sha256/${b2}`)).toBe(1);
    expect(s3.putCount("other", `lab/blobs/sha256/${b3}`)).toBe(1); // the preload only
    expect((await s3.list("other", "lab/blobs/")).map((o) => o.key)).toEqual(
      [b1, b2, b3].map((h) => `lab/blobs/sha256/${h}`).sort(),
    );
    expect(await s3.get("other", `lab/blobs/sha256/${b2}`)).toEqual(frame(2));
    expect(await sidecar.stop("SIGTERM")).toBe(0);
  }, 60_000);

  test("kill -9 in the middle of an upload: the restart resumes, nothing confirmed is sent again", async () => {
    const dataDir = newDataDir();
    const blobs = [11, 12, 13, 14, 15].map((seed) => writeBlob(dataDir, frame(seed, 64 * 1024)));
    // 11 MB of exchanges: a multipart upload in 5 MiB parts.
    writeStoredEpisode(dataDir, "ep_resume", blobs, { paddingBytes: 11_000_000 });
    const stalled = `/records/lab/blobs/sha256/${blobs[3]}`;
    const hold = s3.hold((r) => r.method === "PUT" && r.path === stalled);
    const shipping = { concurrency: 1, part_size_bytes: 5 * 1024 * 1024 };
    const first = await startShippingSidecar({ s3, bucket: "records", dataDir, shipping });
    await hold.held;
    // An upload that hangs blocks no model exchange.
    const live = await first.createEpisode({});
    const started = Date.now();
    expect((await sendSmokeMessage(live)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await shippingOf(first, "ep_resume")).toMatchObject({ state: "uploading" });
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    hold.drop();
    const journalPath = join(dataDir, "shipping", "journal.jsonl");
    const before = readJsonLines<{ event: string; key: string }>(journalPath).entries;
    expect(before.some((e) => e.event === "shipped")).toBe(false);
    const confirmedBefore = before.map((e) => e.key);
    expect(confirmedBefore).toContain("lab/episodes/ep_resume/exchanges.jsonl");
    expect(
      s3.requests.some((r) => r.query.includes("uploads") && r.path.endsWith("ep_resume/exchanges.jsonl")),
    ).toBe(true);

    const second = await startShippingSidecar({ s3, bucket: "records", dataDir, shipping });
    await waitForShipping(second, "ep_resume", (s) => s.state === "shipped");
    await expectEpisodeInBucket("records", dataDir, "ep_resume");
    for (const key of confirmedBefore) {
      const puts = s3.requests.filter(
        (r) => r.method === "PUT" && r.path === `/records/${key}` && !r.query.includes("partNumber"),
      );
      expect({ key, puts: puts.length }).toEqual({ key, puts: key.endsWith("exchanges.jsonl") ? 0 : 1 });
    }
    expect(s3.putCount("records", `lab/blobs/sha256/${blobs[3]}`)).toBe(2); // the killed attempt, then the resumed one
    for (const [i, hex] of blobs.entries())
      expect(await s3.get("records", `lab/blobs/sha256/${hex}`)).toEqual(frame(11 + i, 64 * 1024));
    const after = readJsonLines<{ event: string; key?: string }>(journalPath).entries;
    const keys = after.filter((e) => e.event === "object").map((e) => e.key);
    expect(new Set(keys).size).toBe(keys.length); // each object confirmed once
    expect(await second.stop("SIGTERM")).toBe(0);
  }, 60_000);

  test("a bucket that refuses: retried with back-off, visible, local records kept; ships once it accepts", async () => {
    const dataDir = newDataDir();
    const dir = writeStoredEpisode(dataDir, "ep_refused", [writeBlob(dataDir, frame(21))]);
    const localBefore = readFileSync(join(dir, "exchanges.jsonl"));
    const sidecar = await startShippingSidecar({ s3, bucket: "refusing", dataDir });
    const failing = await waitForShipping(
      sidecar,
      "ep_refused",
      (s) => s.state === "retrying" && s.attempts >= 2,
    );
    expect(failing.last_error).toContain("NoSuchBucket");
    expect(sidecar.output()).toContain("shipping: attempt failed; local records kept, retrying");
    expect(readFileSync(join(dir, "exchanges.jsonl"))).toEqual(localBefore);
    const failingMetrics = await metricValues(sidecar);
    expect(failingMetrics.get('ura_shipping_episodes{state="retrying"}')).toBe(1);
    expect(failingMetrics.get("ura_shipping_failed_attempts_total")).toBeGreaterThanOrEqual(2);
    expect(failingMetrics.get("ura_shipping_episodes_shipped_total")).toBe(0);
    await s3.createBucket("refusing");
    await waitForShipping(sidecar, "ep_refused", (s) => s.state === "shipped");
    await expectEpisodeInBucket("refusing", dataDir, "ep_refused");
    const shippedMetrics = await metricValues(sidecar);
    expect(shippedMetrics.get('ura_shipping_episodes{state="shipped"}')).toBe(1);
    expect(shippedMetrics.get("ura_shipping_episodes_shipped_total")).toBe(1);
    // The episode's record files and its blob, plus shipped.json (counted apart); the files are
    // in the comparison so that a miscount shows what was there.
    const files = readdirSync(dir)
      .filter((name) => !name.endsWith(".tmp"))
      .sort();
    expect({
      files,
      uploaded: shippedMetrics.get("ura_shipping_objects_uploaded_total"),
      deduplicated: shippedMetrics.get("ura_shipping_blobs_deduplicated_total"),
    }).toEqual({ files, uploaded: files.length + 1, deduplicated: 0 });
    expect(await sidecar.stop("SIGTERM")).toBe(0);
  }, 60_000);

  test("wrong credentials: the signature is refused, nothing lands, the secret never appears", async () => {
    const dataDir = newDataDir();
    writeStoredEpisode(dataDir, "ep_badcreds", [writeBlob(dataDir, frame(31))]);
    const wrongSecret = "wrong-secret-key-0123456789";
    const sidecar = await startShippingSidecar({
      s3,
      bucket: "records",
      dataDir,
      env: { AWS_SECRET_ACCESS_KEY: wrongSecret },
    });
    const failing = await waitForShipping(
      sidecar,
      "ep_badcreds",
      (s) => s.state === "retrying" && s.attempts >= 2,
    );
    expect(failing.last_error).toContain("SignatureDoesNotMatch");
    expect(await s3.list("records", "lab/episodes/ep_badcreds/")).toEqual([]);
    expect(await sidecar.stop("SIGTERM")).toBe(0);
    expect(sidecar.output()).not.toContain(wrongSecret);
  }, 60_000);

  test("local retention (opt-in): a shipped episode's directory is deleted at a later start, blobs and unshipped episodes stay", async () => {
    const dataDir = newDataDir();
    const blob = writeBlob(dataDir, frame(41));
    writeStoredEpisode(dataDir, "ep_retained", [blob]);
    const first = await startShippingSidecar({ s3, bucket: "records", dataDir });
    await waitForShipping(first, "ep_retained", (s) => s.state === "shipped");
    expect(await first.stop("SIGTERM")).toBe(0); // appends its stop marker to the restart file
    // Off by default: a plain restart deletes nothing (and ships its new restart file).
    const plain = await startShippingSidecar({ s3, bucket: "records", dataDir });
    await waitForShipping(
      plain,
      "ep_retained",
      (s) => s.state === "shipped" && (s.progress?.objects_uploaded ?? 0) > 0,
    );
    expect(await plain.stop("SIGTERM")).toBe(0);
    expect(existsSync(join(dataDir, "episodes", "ep_retained"))).toBe(true);
    writeStoredEpisode(dataDir, "ep_unshipped", [blob]);
    const second = await startShippingSidecar({
      s3,
      bucket: "records",
      dataDir,
      shipping: { delete_local_after_ms: 1, poll_ms: 60_000 },
    });
    expect(existsSync(join(dataDir, "episodes", "ep_retained"))).toBe(false);
    expect(existsSync(join(dataDir, "episodes", "ep_unshipped"))).toBe(true);
    expect(existsSync(join(dataDir, "blobs", "sha256", blob))).toBe(true);
    expect(second.output()).toContain("local records of shipped episodes deleted (retention)");
    expect((await s3.list("records", "lab/episodes/ep_retained/")).map((o) => o.key)).toContain(
      "lab/episodes/ep_retained/shipped.json",
    );
    expect(await second.stop("SIGTERM")).toBe(0);
  }, 60_000);

  test("shipping configured without credentials: a configuration error at start-up", async () => {
    const dataDir = newDataDir();
    const started = startShippingSidecar({
      s3,
      bucket: "records",
      dataDir,
      env: { AWS_ACCESS_KEY_ID: "", AWS_SECRET_ACCESS_KEY: "" },
    });
    await expect(started).rejects.toThrow(/exit 2[\s\S]*no credentials/);
  }, 60_000);
});
