/**
 * A long episode's whole history fits the default client body limit
 * (body_limit_bytes), against the compiled binary: a Responses history of 150 MB —
 * about the size of a 180-turn 640×480 camera history, and over both the old
 * 64 MiB default and the HTTP server's own 128 MiB default — is taken in, reduced
 * by body_budget to the provider limit, and answered 200. Needs `make build`.
 * Each tool result is 1 MiB of text (~262K tokens), so even the two protected newest
 * blocks are over a 256K model's window (the window guard would refuse them): the episode
 * runs a 1M-window model.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type CannedUpstream, serveCannedUpstream } from "../support/canned-upstream.ts";
import { startHardenedSidecar } from "../support/hardening-kit.ts";
import type { SidecarProcess } from "../support/sidecar-process.ts";

setDefaultTimeout(60_000);

let upstream: CannedUpstream;
let sidecar: SidecarProcess;
beforeAll(async () => {
  upstream = serveCannedUpstream();
  sidecar = await startHardenedSidecar(upstream, { context: { policy: "body_budget" } });
});
afterAll(async () => {
  await sidecar.stop();
  upstream.stop();
});

test("a 150 MB history is taken in under the default body limit and answered within the provider limit", async () => {
  const episode = await sidecar.createEpisode({ max_turns: 0, model: "qwen3.5-plus" });
  const output = "x".repeat(1024 * 1024);
  const blocks: string[] = [];
  for (let i = 0; i < 150; i++) {
    blocks.push(
      JSON.stringify({ type: "function_call", call_id: `call_${i}`, name: "ura_observe", arguments: "{}" }),
      JSON.stringify({ type: "function_call_output", call_id: `call_${i}`, output }),
    );
  }
  const head = JSON.stringify({ type: "message", role: "user", content: "observe on every turn" });
  const tools = JSON.stringify([
    { type: "function", name: "ura_observe", parameters: { type: "object", properties: {} } },
  ]);
  const body = `{"model":"ura-qwen","stream":false,"store":false,"tools":${tools},"input":[${head},${blocks.join(",")}]}`;
  expect(body.length).toBeGreaterThan(150 * 1024 * 1024);
  upstream.reset();
  const res = await fetch(`${episode.urls.responses}/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingress_key}` },
    body,
  });
  const answer = await res.text();
  expect({ status: res.status, answer: answer.slice(0, 300) }).toMatchObject({ status: 200 });
  expect(upstream.received).toHaveLength(1);
  const sent = JSON.stringify(upstream.received[0]?.body).length;
  expect(sent).toBeLessThanOrEqual(6 * 1024 * 1024);
  expect(sent).toBeGreaterThan(3 * 1024 * 1024);
});
