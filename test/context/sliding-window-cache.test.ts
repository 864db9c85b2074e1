/**
 * What a sliding_window episode keeps in the process-wide image cache, through the whole
 * in-process app (composed as the binary is) and the Responses ingress, the whole history
 * resent every turn. A frame the window has replaced by an omission notice is never sent
 * again by a longer history, so the episode lets go of its WebP; a frame left out only
 * because its call/result block was removed may come back, so it stays cached and is not
 * converted again when it does. Conversions are read from each exchange's record.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { ContextDecision } from "../../src/context/decision-schema.ts";
import { contextPolicySchema } from "../../src/context/policy-schema.ts";
import { rgbNoisePng } from "../../src/images/generate-png.ts";
import { sha256OfBase64 } from "../../src/lib/sha256.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";
import { observeResponsesRequest } from "../support/observe-responses-request.ts";

let s: InProcessSidecar;
const bodies: string[] = [];
beforeAll(async () => {
  s = await createInProcessSidecar({
    upstreamFetch: async (request) => {
      bodies.push(await request.clone().text());
      return s.scripted.fetch(request);
    },
  });
});
afterAll(() => s.stop());

type Result = { text?: string; images: string[] };

/** A Responses request: the instruction, then one observe call per result, each result's text and PNGs. */
function historyRequest(results: Result[]) {
  return observeResponsesRequest(
    "Observe every turn.",
    results.map((result, i) => [
      { type: "input_text", text: result.text ?? `frame ${i}` },
      ...result.images.map((png) => ({ type: "input_image", image_url: `data:image/png;base64,${png}` })),
    ]),
  );
}

/** A sliding_window episode; `post` sends a history and returns the body upstream got and the PNGs converted. */
function slidingEpisode(settings: Record<string, number>) {
  const episode = s.createEpisode({
    max_turns: 0,
    context: contextPolicySchema.parse({ policy: "sliding_window", ...settings }),
  });
  const post = async (results: Result[]) => {
    const res = await s.app.request(`/e/${episode.id}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingressKey}` },
      body: JSON.stringify(historyRequest(results)),
    });
    expect({ status: res.status, body: res.status === 200 ? "" : await res.text() }).toEqual({
      status: 200,
      body: "",
    });
    await res.text();
    const exchange = openRecords(s.dataDir).readEpisode(episode.id).exchanges.at(-1);
    const images = exchange?.line("upstream_request")?.images;
    const decision = exchange?.line("after_context")?.decision as ContextDecision;
    return { body: bodies.at(-1) as string, converted: images?.converted ?? 0, decision };
  };
  return Object.assign(post, { episode });
}

const cached = (png: string) => s.imageCache.peek(sha256OfBase64(png)) !== undefined;
const notice = (callId: string, image: number) =>
  `[image omitted by the context policy: tool result ${callId}, image ${image}]`;

test("a camera episode keeps cached the frames it sends, not those the window replaced by notices", async () => {
  const frames = Array.from({ length: 24 }, (_, i) => rgbNoisePng(48, 36, 500 + i).png.toBase64());
  const frameTokens = Math.ceil((frames[0] as string).length / 4);
  const post = slidingEpisode({
    max_input_tokens: 6 * frameTokens,
    target_input_tokens: 4 * frameTokens,
    min_recent_tool_images: 2,
    image_eviction_batch_size: 2,
    keep_recent_blocks: 2,
  });
  let omittedAtEnd = 0;
  for (let turns = 1; turns <= frames.length; turns++) {
    const { converted, decision } = await post(frames.slice(0, turns).map((png) => ({ images: [png] })));
    // Only the new frame is converted: no frame the episode still sends was let go.
    expect({ turns, converted }).toEqual({ turns, converted: 1 });
    const replaced = new Set(decision.images_omitted.map((o) => o.toolCallId));
    const omitted = frames.slice(0, turns).map((_, i) => replaced.has(`call_${i}`));
    const state = frames.slice(0, turns).map((png, i) => ({ i, omitted: omitted[i], cached: cached(png) }));
    expect(state).toEqual(state.map(({ i, omitted }) => ({ i, omitted, cached: !omitted })));
    omittedAtEnd = omitted.filter(Boolean).length;
  }
  // The window did act: most of the history was omitted, and its frames are gone from the cache.
  expect(omittedAtEnd).toBeGreaterThanOrEqual(frames.length - 6);
});

test("a frame left out only with its removed block stays cached, and comes back without a conversion", async () => {
  // One large frame (big) and three small ones; call_1's result carries a long text.
  const big = rgbNoisePng(96, 96, 900).png.toBase64();
  const [again, small1, small2] = [901, 902, 903].map((seed) => rgbNoisePng(8, 8, seed).png.toBase64());
  const bigTokens = Math.ceil(big.length / 4);
  const post = slidingEpisode({
    max_input_tokens: Math.round(1.25 * bigTokens),
    target_input_tokens: Math.round(0.75 * bigTokens),
    min_recent_tool_images: 3,
    image_eviction_batch_size: 1,
    keep_recent_blocks: 1,
  });
  const first: Result = { images: [big, again as string] };
  const second: Result = { text: "x".repeat(Math.round(big.length / 2)), images: [small1 as string] };
  const third: Result = { images: [small2 as string] };

  // Under max_input_tokens: everything is sent and converted.
  const one = await post([first]);
  expect(one.converted).toBe(2);
  expect([cached(big), cached(again as string)]).toEqual([true, true]);

  // Over it, with every tool image protected: the oldest block goes whole, both its frames with it.
  const two = await post([first, second]);
  expect(two.body).not.toContain('"call_0"');
  expect(two.converted).toBe(1);
  // A longer history may keep that block again: its frames stay cached.
  expect([cached(big), cached(again as string)]).toEqual([true, true]);

  // One more frame: the episode keeps its reduction while the request fits with it (the
  // prompt only appends, docs/context-policies.md): the block stays out, its frames cached.
  const kept = await post([first, second, third]);
  expect(kept.body).not.toContain('"call_0"');
  expect(kept.converted).toBe(1);
  expect([cached(big), cached(again as string)]).toEqual([true, true]);

  // A fresh decision (as after a restart, which forgets the reduction): the big frame is now
  // omissible, a notice for it is enough, and the block comes back.
  post.episode.contextMemory.previous = undefined;
  const three = await post([first, second, third]);
  expect(three.body).toContain(notice("call_0", 1));
  expect(three.body).not.toContain(notice("call_0", 2));
  expect(three.body).toContain('"call_0"');
  // Its second frame is sent again from the cache: nothing is converted.
  expect(three.converted).toBe(0);
  expect(cached(again as string)).toBe(true);
  // The big frame is now omitted for good: the episode lets go of it.
  expect(cached(big)).toBe(false);
});
