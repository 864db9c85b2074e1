import { beforeAll, describe, expect, test } from "bun:test";
import { observeHistory } from "../../test/support/observe-history.ts";
import { type ContextMemory, createContextMemory } from "../context/context-cut.ts";
import { type BodyBudgetPolicy, contextPolicySchema } from "../context/policy-schema.ts";
import type { HubMessage, HubRequest } from "../hub/schema.ts";
import { type Codecs, loadCodecs } from "../images/codecs.ts";
import { createImageConverter, type ImageConverter } from "../images/convert-request.ts";
import { rgbNoisePng } from "../images/generate-png.ts";
import { createImageCache, type ImageCache } from "../images/image-cache.ts";
import { convertOnThisThread, type PngToWebp } from "../images/png-to-webp.ts";
import { webpSettingsSchema } from "../images/settings.ts";
import { sha256Hex, sha256OfBase64 } from "../lib/sha256.ts";
import { buildChatRequest } from "../upstream/build-chat-request.ts";
import { buildUpstreamBody } from "./build-upstream-body.ts";
import { decideContext } from "./decide-context.ts";

const target = { model: "qwen3-vl-plus", imageInput: true, parallelToolCalls: true };
// A camera history at 1/100 scale (frames of a few KB of WebP, a 64 KiB limit): the same
// shape, with bodies small enough to render every candidate for the comparison.
const limit = 64 * 1024;
const settings = webpSettingsSchema.parse({});
let codecs: Codecs;
/** 120 distinct noisy frames of 20–36 pixels a side, so their WebPs differ in size. */
let frames: string[];
beforeAll(async () => {
  codecs = await loadCodecs();
  frames = Array.from({ length: 120 }, (_, i) => {
    const side = 20 + ((i * 7) % 17);
    return rgbNoisePng(side, side, 100 + i).png.toBase64();
  });
});

function cameraHistory(turns: number): HubRequest {
  return observeHistory(
    [
      { role: "system", content: [{ type: "text", text: "You drive a robot arm." }] },
      { role: "user", content: [{ type: "text", text: "Watch the table; observe every turn." }] },
    ],
    turns,
    (i) => [
      { type: "text", text: `observation ${i}: "front" camera` },
      { type: "image", mediaType: "image/png", data: frames[i] as string },
    ],
    { model: "ura-qwen" },
  );
}

/** The real in-process conversion, noting the digest of every PNG it is given. */
function countingConverter(): PngToWebp & { converted: string[] } {
  const inner = convertOnThisThread(codecs);
  const converted: string[] = [];
  return {
    converted,
    convert(png, s) {
      converted.push(sha256Hex(png));
      return inner.convert(png, s);
    },
  };
}

const imagesWith = (converter: PngToWebp, cache: ImageCache = createImageCache(64 * 1024 * 1024)) =>
  createImageConverter({ converter, settings, cache, owner: "e1" });

/**
 * The policy's rule without the episode's previous reduction, by brute force: convert
 * every frame, then render every candidate (batches of frames omitted oldest first, then
 * blocks removed oldest first); the first whose body fits the budget, then, while above
 * the low-water mark, more batches (never more blocks).
 */
async function firstFittingBody(request: HubRequest, policy: BodyBudgetPolicy): Promise<string> {
  const { request: converted } = await imagesWith(convertOnThisThread(codecs)).convertRequest(request);
  const results = converted.messages.filter((m) => m.role === "tool");
  const batch = policy.image_eviction_batch_size;
  const batches = Math.floor(Math.max(0, results.length - policy.min_recent_tool_images) / batch);
  const blocks = Math.max(0, results.length - policy.keep_recent_blocks);
  const budget = Math.min(policy.max_body_bytes ?? limit, limit);
  const lowWater = Math.floor(budget * policy.low_water_fraction);
  const bodyAt = (step: number) => {
    const omitted = Math.min(step, batches) * batch;
    const removed = Math.max(0, step - batches);
    const messages = converted.messages.flatMap((message, i): HubMessage[] => {
      const turn = Math.floor((i - 2) / 2);
      if (i < 2) return [message];
      if (turn < removed) return [];
      if (message.role !== "tool" || turn >= omitted) return [message];
      const notice = `[image omitted by the context policy: tool result ${message.toolCallId}, image 1]`;
      return [{ ...message, content: [message.content[0] as never, { type: "text", text: notice }] }];
    });
    return JSON.stringify(buildChatRequest({ ...converted, messages }, target));
  };
  for (let step = 0; step <= batches + blocks; step++) {
    if (Buffer.byteLength(bodyAt(step)) > budget) continue;
    if (step === 0) return bodyAt(0);
    let chosen = step;
    while (chosen < batches && Buffer.byteLength(bodyAt(chosen)) > lowWater) chosen += 1;
    return bodyAt(chosen);
  }
  throw new Error("nothing fits");
}

const policies = [
  {},
  { image_eviction_batch_size: 2, min_recent_tool_images: 2 },
  { max_body_bytes: 30_000, min_recent_tool_images: 9, keep_recent_blocks: 3 },
  { image_eviction_batch_size: 8, low_water_fraction: 1 },
].map((extra) => contextPolicySchema.parse({ policy: "body_budget", ...extra }) as BodyBudgetPolicy);

/** The context stage, then the body stage, as an exchange runs them; with the one decision. */
async function budgetedBody(
  request: HubRequest,
  policy: BodyBudgetPolicy,
  images: ImageConverter,
  memory?: ContextMemory,
) {
  const context = await decideContext(request, policy, { target, providerLimitBytes: limit, images, memory });
  return { ...(await buildUpstreamBody(context, { target, images })), budget: context.decision };
}

/** The camera history of `turns` turns through body_budget, converted by `images`; and the turns whose frame was sent. */
async function sendHistory(
  turns: number,
  policy: BodyBudgetPolicy,
  images: ImageConverter,
  memory?: ContextMemory,
) {
  const request = cameraHistory(turns);
  const built = await budgetedBody(request, policy, images, memory);
  const sent = built.request.messages.flatMap((m) =>
    m.role === "tool" && m.content.some((p) => p.type === "image") ? [Number(m.toolCallId.slice(5))] : [],
  );
  return { request, built, sent };
}

describe("buildUpstreamBody under body_budget", () => {
  test("sends the same body as converting everything and rendering every candidate, at every length", async () => {
    for (const [p, policy] of policies.entries()) {
      for (const turns of [1, 9, 14, 15, 16, 23, 40, 71, 100, 120]) {
        const { request, built } = await sendHistory(turns, policy, imagesWith(convertOnThisThread(codecs)));
        const same = built.body === (await firstFittingBody(request, policy));
        expect({ policy: p, turns, same }).toEqual({ policy: p, turns, same: true });
        expect(built.budget?.body_budget?.bytes_after).toBe(Buffer.byteLength(built.body));
      }
    }
  });

  test("frames older than the newest batch left out are never given to the converter, with a cold cache or a warm one", async () => {
    // Reducing to the budget itself (low_water_fraction 1): with a lower mark and no previous
    // reduction (a restart), the newest frames between the mark and the budget are sized too.
    const policy = policies[3] as BodyBudgetPolicy;
    const warm = createImageCache(64 * 1024 * 1024);
    const digestOf = (i: number) => sha256Hex(Buffer.from(frames[i] as string, "base64"));
    for (const turns of [45, 60, 61, 100]) {
      for (const cache of [createImageCache(64 * 1024 * 1024), warm]) {
        const converter = countingConverter();
        const { built, sent } = await sendHistory(turns, policy, imagesWith(converter, cache));
        const oldestSent = Math.min(...sent);
        expect(oldestSent).toBeGreaterThanOrEqual(2 * policy.image_eviction_batch_size);
        // Only the batch just before the oldest frame sent may have been converted (to find it over).
        const converted = new Set(converter.converted);
        for (let i = 0; i < oldestSent - policy.image_eviction_batch_size; i++)
          expect({ i, converted: converted.has(digestOf(i)) }).toEqual({ i, converted: false });
        expect(built.stats.leftOut).toBe(turns - sent.length);
        if (cache !== warm) {
          for (const i of sent) expect(converted.has(digestOf(i))).toBe(true);
          expect(converter.converted.length).toBeLessThanOrEqual(
            sent.length + policy.image_eviction_batch_size,
          );
        }
        expect(built.stats.converted).toBe(converter.converted.length);
      }
    }
  });

  test("turn after turn with one cache, each turn converts its new frame and nothing the budget drops", async () => {
    for (const policy of policies) {
      const cache = createImageCache(64 * 1024 * 1024);
      const memory = createContextMemory();
      const converter = countingConverter();
      let sentBefore = new Set<number>();
      for (let turns = 1; turns <= 80; turns++) {
        const convertedBefore = converter.converted.length;
        const { built, sent: sentList } = await sendHistory(
          turns,
          policy,
          imagesWith(converter, cache),
          memory,
        );
        const sent = new Set(sentList);
        // Every frame sent was sent the turn before too, or is new; a frame dropped once stays dropped.
        for (const turn of sent) expect(sentBefore.has(turn) || turn === turns - 1).toBe(true);
        expect({ turns, converted: converter.converted.length - convertedBefore }).toEqual({
          turns,
          converted: 1,
        });
        // The cache holds what is sent and the newest batch dropped, not the whole history.
        // The cache holds what is sent and the newest batch omitted (and the frames of removed
        // blocks not omitted), not the whole history.
        const omitted = built.budget?.images_omitted.length ?? 0;
        const removedOnly = turns - sent.size - omitted;
        expect(cache.entries).toBeLessThanOrEqual(
          sent.size + Math.min(omitted, policy.image_eviction_batch_size) + removedOnly,
        );
        sentBefore = sent;
      }
      expect(new Set(converter.converted).size).toBe(converter.converted.length);
    }
  });

  test("a frame dropped for good stays cached while another episode sends it, or this request sends it again", async () => {
    const policy = policies[1] as BodyBudgetPolicy;
    const cache = createImageCache(64 * 1024 * 1024);
    const digestOf = (i: number) => sha256OfBase64(frames[i] as string);
    const other = createImageConverter({
      converter: convertOnThisThread(codecs),
      settings,
      cache,
      owner: "e2",
    });
    await other.convertRequest(cameraHistory(1));
    let sent: number[] = [];
    for (let turns = 1; turns <= 40; turns++)
      ({ sent } = await sendHistory(turns, policy, imagesWith(convertOnThisThread(codecs), cache)));
    expect(Math.min(...sent)).toBeGreaterThan(2 * policy.image_eviction_batch_size);
    expect(cache.peek(digestOf(0))).toBeDefined(); // e2 sends frame 0
    expect(cache.peek(digestOf(1))).toBeUndefined();
    // Frame 2 again as the newest frame: it is sent, so it stays although its old place is dropped.
    const request = cameraHistory(40);
    const repeat = structuredClone(request.messages.at(-1) as HubMessage);
    if (repeat.role === "tool")
      repeat.content[1] = { type: "image", mediaType: "image/png", data: frames[2] as string };
    const again = { ...request, messages: [...request.messages.slice(0, -1), repeat] };
    await budgetedBody(again, policy, imagesWith(convertOnThisThread(codecs), cache));
    expect(cache.peek(digestOf(2))).toBeDefined();
    expect(cache.peek(digestOf(3))).toBeUndefined();
  });
});
