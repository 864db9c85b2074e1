/**
 * What the response store of one episode costs when a client resends its whole camera
 * history every turn and leaves `store` at its default (the official `openai` SDK does):
 * each request is a new parse, so every turn's stored input is a new copy of every frame.
 * The store keeps one string per distinct frame, so its memory grows with the frames,
 * not with frames × turns. Measured as the engine's heap (large strings are counted
 * there) after full collections, through the whole in-process app and the Responses route.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rgbNoisePng } from "../../src/images/generate-png.ts";
import type { OutputItem } from "../../src/ingress/responses/from-hub.ts";
import { outputAsInput } from "../../src/ingress/responses/stored-responses.ts";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";
import { frameOutput, observeInput } from "../support/observe-responses-request.ts";

let s: InProcessSidecar;
beforeAll(async () => {
  s = await createInProcessSidecar();
});
afterAll(() => s.stop());

const turns = 30;
/** An episode's camera frames (each episode its own, so each pays the image cache alike). */
const framesOf = (episode: number) =>
  Array.from({ length: turns }, (_, i) =>
    Buffer.from(rgbNoisePng(128, 128, episode * 100 + i).png).toBase64(),
  );
const frameChars = framesOf(1).reduce((sum, frame) => sum + frame.length, 0);

/** The instruction, then one observe call and its result (text and frame) per turn so far. */
function history(upTo: number, frames: string[]): unknown[] {
  return observeInput(
    "Observe every turn.",
    Array.from({ length: upTo }, (_, i) => frameOutput(i, frames[i])),
  );
}

function episodeClient() {
  const episode = s.createEpisode();
  return async (body: Record<string, unknown>) => {
    const res = await s.app.request(`/e/${episode.id}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingressKey}` },
      body: JSON.stringify({
        model: "ura-qwen",
        tools: [{ type: "function", name: "ura_observe", parameters: { type: "object" } }],
        ...body,
      }),
    });
    const text = await res.text();
    expect({ status: res.status, text: res.status === 200 ? "" : text }).toEqual({ status: 200, text: "" });
    return JSON.parse(text) as { id: string; output: OutputItem[] };
  };
}

function heapAfterCollection(): number {
  Bun.gc(true);
  Bun.gc(true);
  return process.memoryUsage().heapUsed;
}

/** How much the heap grew over `turns` turns of one new episode; the episode's last answer. */
async function heapGrowth(store: boolean | undefined, frames: string[]) {
  const post = episodeClient();
  const before = heapAfterCollection();
  let last: { id: string; output: OutputItem[] } = { id: "", output: [] };
  for (let turn = 1; turn <= turns; turn++) {
    last = await post({ input: history(turn, frames), ...(store === undefined ? {} : { store }) });
    // The scripted upstream keeps what it received; that is not the sidecar's memory.
    s.scripted.received.length = 0;
  }
  return { grown: heapAfterCollection() - before, post, last };
}

test("30 turns of full-resend camera history with store left at its default: the store holds each frame once", async () => {
  // Warm up everything a first exchange loads, in another episode.
  await episodeClient()({ input: history(1, framesOf(0)) });
  s.scripted.received.length = 0;

  // The same turns with store:false cost what the rest of the sidecar keeps (image cache, records).
  const unstored = await heapGrowth(false, framesOf(1));
  const frames = framesOf(2);
  const { grown, post, last } = await heapGrowth(undefined, frames);
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  console.log(
    `heap grown over ${turns} turns: ${mb(grown)} stored, ${mb(unstored.grown)} store:false; frames ${mb(frameChars)} distinct, ${mb((frameChars * (turns + 1)) / 2)} resent`,
  );
  // Holding every turn's copy costs frames × (turns + 1) / 2, ~15× the distinct frames here.
  expect(grown - unstored.grown).toBeLessThan(frameChars * 3);

  // Interned items resolve as before: continuing the last response sends upstream what its full history does.
  const next = { type: "message", role: "user", content: "Go on." };
  await post({ previous_response_id: last.id, input: [next] });
  const chained = s.scripted.received.at(-1)?.body;
  await post({ input: [...history(turns, frames), ...outputAsInput(last.output), next] });
  expect(s.scripted.received).toHaveLength(2);
  expect(chained).toEqual(s.scripted.received.at(-1)?.body);
});
