/**
 * body_bytes_in_flight through the whole in-process app: large model requests
 * past the bound wait, received, until earlier ones are answered; small model
 * requests and every other route go on at once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";

const MiB = 1024 * 1024;
let s: InProcessSidecar;
let origin: string;
const upstreamStarts: number[] = [];
let holdUpstream: Promise<void> = Promise.resolve();
beforeAll(async () => {
  s = await createInProcessSidecar({
    config: { body_bytes_in_flight: 3 * MiB, images: { limits: { max_request_bytes: 8 * MiB } } },
    upstreamFetch: async (request) => {
      upstreamStarts.push(Date.now());
      await holdUpstream;
      return s.scripted.fetch(request);
    },
  });
  origin = s.serve();
});
afterAll(() => s.stop());

function post(episode: ReturnType<InProcessSidecar["createEpisode"]>, textBytes: number) {
  return fetch(`${origin}/e/${episode.id}/v1/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingressKey}` },
    body: JSON.stringify({ model: "ura-qwen", stream: false, store: false, input: "x".repeat(textBytes) }),
  }).then(async (res) => ({ status: res.status, at: Date.now(), text: await res.text() }));
}

test("a second large body waits for the first to be answered; a small one does not", async () => {
  let release = () => {};
  holdUpstream = new Promise((resolve) => {
    release = resolve;
  });
  const [a, b, c] = [s.createEpisode(), s.createEpisode(), s.createEpisode()];
  const first = post(a, 2 * MiB);
  await Bun.sleep(300);
  const second = post(b, 2 * MiB);
  await Bun.sleep(300);
  const small = post(c, 1000);
  await Bun.sleep(300);
  // The first and the small request are upstream; the second waits for the first's answer.
  expect(upstreamStarts).toHaveLength(2);
  const health = await fetch(`${origin}/health/live`);
  expect(health.status).toBe(200);
  const answeredAt = Date.now();
  release();
  const results = await Promise.all([first, second, small]);
  expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
  expect(upstreamStarts).toHaveLength(3);
  expect(upstreamStarts[2]).toBeGreaterThanOrEqual(answeredAt);
});
