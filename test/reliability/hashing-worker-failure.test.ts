/**
 * With `server.hash_worker`, a request body's long strings are hashed in a worker while
 * the body arrives (src/lib/sha256-off-thread.ts); without it, on the main thread. A worker
 * that dies fails the exchange whose chunks it held with a retryable error in the client's
 * own envelope, recorded; it never hangs the exchange, and the next request (the client's
 * retry, another episode's) is served by a new worker.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { cameraLikeFrame } from "../../src/images/synthetic-frames.ts";
import { writePng } from "../../src/images/write-png.ts";
import { createOffThreadSha256 } from "../../src/lib/sha256-off-thread.ts";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";

setDefaultTimeout(60_000);

const dir = mkdtempSync(join(tmpdir(), "ura-hashing-failure-"));
const dying = join(dir, "dies");
// The real worker, unless told to die: then it exits at its first chunk, holding it.
writeFileSync(
  join(dir, "worker.ts"),
  `import { existsSync } from "node:fs";
import ${JSON.stringify(resolve(import.meta.dir, "../../src/lib/sha256-worker.ts"))};
if (existsSync(${JSON.stringify(dying)})) self.onmessage = () => process.exit(1);
`,
);
const hashing = createOffThreadSha256({ url: new URL(`file://${join(dir, "worker.ts")}`) });
let s: InProcessSidecar;
beforeAll(async () => {
  s = await createInProcessSidecar({ hashing });
});
afterAll(async () => {
  await s.stop();
  hashing.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A noisy 320×240 camera-like frame as base64 PNG (~190 KB: a body of 8 is over a MiB, so it is split). */
function frame(seed: number): string {
  const { data } = cameraLikeFrame(320, 240, seed, 8);
  const rgb = new Uint8Array((data.length / 4) * 3);
  for (let i = 0, j = 0; i < data.length; i += 4, j += 3) rgb.set(data.subarray(i, i + 3), j);
  return writePng({ width: 320, height: 240, colourType: 2, bitDepth: 8, rows: rgb }).toBase64();
}

const body = JSON.stringify({
  model: "ura-qwen",
  stream: false,
  store: false,
  input: [
    { type: "message", role: "user", content: [{ type: "input_text", text: "watch" }] },
    ...Array.from({ length: 8 }, (_, i) => ({
      type: "message",
      role: "user",
      content: [{ type: "input_image", image_url: `data:image/png;base64,${frame(900 + i)}` }],
    })),
  ],
});

async function post(episode: { id: string; ingressKey: string }): Promise<Response> {
  return s.app.request(`/e/${episode.id}/v1/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingressKey}` },
    body,
  });
}

test("a hashing worker that dies fails that exchange with a retryable error; the retry and other episodes are served", async () => {
  const episode = s.createEpisode();
  const other = s.createEpisode();
  writeFileSync(dying, "");
  const failed = await post(episode);
  expect(failed.status).toBe(503);
  const answer = (await failed.json()) as { error: { message: string } };
  expect(answer.error.message).toContain("hashing the request body's long strings failed");
  expect(answer.error.message).toContain("the request can be sent again");
  expect(s.knownTexts.counts().live).toBe(0);

  rmSync(dying);
  const retried = await post(episode);
  expect(retried.status, await retried.clone().text()).toBe(200);
  expect((await post(other)).status).toBe(200);
  expect(hashing.started).toBe(2);

  // The failed request is recorded (no exchange, no turn); the retry is the episode's first exchange.
  const records = s.episodes.get(episode.id).describe().records_dir;
  expect(readJsonLines<Record<string, unknown>>(join(records, "auxiliary.jsonl")).entries).toMatchObject([
    { operation: "body_failed", status: 503 },
  ]);
  const exchanges = openRecords(s.dataDir).readEpisode(episode.id).exchanges;
  expect(exchanges.map((exchange) => exchange.stage("status")?.value.status)).toEqual(["delivered"]);
});

test("server.hash_worker starts the worker at the first split body; without it none is made", async () => {
  const plain = await createInProcessSidecar();
  const hashed = await createInProcessSidecar({ config: { server: { hash_worker: true } } });
  try {
    expect(plain.knownTexts.hashing).toBeUndefined();
    expect(hashed.knownTexts.hashing?.started).toBe(0);
    for (const sidecar of [plain, hashed]) {
      const episode = sidecar.createEpisode();
      const res = await sidecar.app.request(`/e/${episode.id}/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingressKey}` },
        body,
      });
      expect(res.status).toBe(200);
    }
    expect(hashed.knownTexts.hashing?.started).toBe(1);
  } finally {
    await plain.stop();
    await hashed.stop();
  }
});
