/**
 * body_bytes_in_flight through the whole in-process app: large model requests
 * past the bound wait, received, until earlier ones are answered; small model
 * requests and every other route go on at once. A body sent chunked (no
 * content-length) is sized by the bytes received, for the bound and for the
 * memory reclaimer alike.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { declaredModel } from "../support/declared-model.ts";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";

const MiB = 1024 * 1024;
const longModel = declaredModel({ context_window: 4_000_000, max_input_tokens: 3_000_000 });
let s: InProcessSidecar;
let origin: string;
const upstreamStarts: number[] = [];
let holdUpstream: Promise<void> = Promise.resolve();
beforeAll(async () => {
  s = await createInProcessSidecar({
    config: {
      body_bytes_in_flight: 3 * MiB,
      images: { limits: { max_request_bytes: 8 * MiB } },
      // Bodies of a few MiB of text: a model whose input limit holds them (the upstream refuses a longer prompt).
      upstream: { model: "qwen-custom-long", models: { "qwen-custom-long": longModel } },
    },
    upstreamFetch: async (request) => {
      upstreamStarts.push(Date.now());
      await holdUpstream;
      return s.scripted.fetch(request);
    },
  });
  origin = s.serve();
});
afterAll(() => s.stop());

type Episode = ReturnType<InProcessSidecar["createEpisode"]>;

const requestOf = (textBytes: number) =>
  JSON.stringify({ model: "ura-qwen", stream: false, store: false, input: "x".repeat(textBytes) });

/** POSTs a Responses request with `textBytes` of input; `chunked`: as a stream, so fetch sends no content-length. */
function post(episode: Episode, textBytes: number, framing: { chunked?: boolean } = {}) {
  const text = requestOf(textBytes);
  return fetch(`${origin}/e/${episode.id}/v1/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingressKey}` },
    body: framing.chunked ? inChunks(text) : text,
    duplex: "half",
  } as RequestInit).then(async (res) => ({ status: res.status, at: Date.now(), text: await res.text() }));
}

function inChunks(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(sent, sent + 256 * 1024));
      sent += 256 * 1024;
    },
  });
}

function holdUpstreamUntilReleased(): () => void {
  let release = () => {};
  holdUpstream = new Promise((resolve) => {
    release = resolve;
  });
  upstreamStarts.length = 0;
  return release;
}

test("a second large body waits for the first to be answered; a small one does not", async () => {
  const release = holdUpstreamUntilReleased();
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

test("two large chunked bodies are admitted one at a time", async () => {
  const release = holdUpstreamUntilReleased();
  const [a, b] = [s.createEpisode(), s.createEpisode()];
  const first = post(a, 2 * MiB, { chunked: true });
  await Bun.sleep(300);
  const second = post(b, 2 * MiB, { chunked: true });
  await Bun.sleep(300);
  expect(upstreamStarts).toHaveLength(1);
  const answeredAt = Date.now();
  release();
  const results = await Promise.all([first, second]);
  expect(results.map((r) => r.status)).toEqual([200, 200]);
  expect(upstreamStarts).toHaveLength(2);
  expect(upstreamStarts[1]).toBeGreaterThanOrEqual(answeredAt);
});

test("the memory reclaimer is told a chunked request's size once it is answered", async () => {
  holdUpstreamUntilReleased()();
  const told: number[] = [];
  const requestEnded = s.memory.requestEnded;
  s.memory.requestEnded = (bytes) => {
    told.push(bytes);
    requestEnded(bytes);
  };
  try {
    const answer = await post(s.createEpisode(), 5 * MiB, { chunked: true });
    expect(answer.status).toBe(200);
  } finally {
    s.memory.requestEnded = requestEnded;
  }
  // Over the reclaimer's threshold (4 MiB, src/server/compose.ts): a collection follows.
  expect(told).toEqual([Buffer.byteLength(requestOf(5 * MiB))]);
});
