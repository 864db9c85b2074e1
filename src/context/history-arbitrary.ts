/**
 * Test support (fast-check): valid hub requests with long, mixed histories —
 * system prompt, user text and images, assistant text, and call/result batches of
 * 1–3 calls whose results carry 0–2 images. Call ids are unique by construction.
 * Used by the property tests; never imported by the product.
 */
import fc from "fast-check";
import type { HubMessage, HubPart, HubRequest } from "../hub/schema.ts";

export type Segment =
  | { kind: "user"; text: string; images: number[] }
  | { kind: "assistant_text"; text: string }
  | { kind: "block"; calls: { name: string; args: string; text: string; images: number[] }[] };

const imageSizes = (max: number) => fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: max });

export const segmentArbitrary: fc.Arbitrary<Segment> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant("user" as const),
      text: fc.string({ maxLength: 100 }),
      images: imageSizes(1),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant("assistant_text" as const),
      text: fc.string({ maxLength: 100 }),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant("block" as const),
      calls: fc.array(
        fc.record({
          name: fc.constantFrom("move_arm", "capture_image", "grip", "read_sensor"),
          args: fc.json({ maxDepth: 1 }),
          text: fc.string({ maxLength: 300, unit: "binary" }),
          images: imageSizes(2),
        }),
        { minLength: 1, maxLength: 3 },
      ),
    }),
    weight: 6,
  },
);

/** base64-looking data of a given length, deterministic per seed. */
function imageData(length: number, seed: number): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let data = "";
  for (let i = 0; i < length; i++) data += alphabet[(i * 7 + seed) % 64];
  return data;
}

function image(length: number, seed: number): HubPart {
  return { type: "image", mediaType: "image/png", data: imageData(length, seed) };
}

export function buildHistory(segments: readonly Segment[], system: string | null): HubMessage[] {
  const messages: HubMessage[] = [];
  if (system !== null) messages.push({ role: "system", content: [{ type: "text", text: system }] });
  let seed = 0;
  segments.forEach((segment, s) => {
    switch (segment.kind) {
      case "user":
        messages.push({
          role: "user",
          content: [{ type: "text", text: segment.text }, ...segment.images.map((n) => image(n, seed++))],
        });
        break;
      case "assistant_text":
        messages.push({ role: "assistant", text: segment.text, toolCalls: [] });
        break;
      case "block": {
        const calls = segment.calls.map((call, c) => ({
          id: `call_${s}_${c}`,
          name: call.name,
          arguments: call.args,
        }));
        messages.push({ role: "assistant", text: null, toolCalls: calls });
        segment.calls.forEach((call, c) => {
          messages.push({
            role: "tool",
            toolCallId: `call_${s}_${c}`,
            name: call.name,
            content: [{ type: "text", text: call.text }, ...call.images.map((n) => image(n, seed++))],
          });
        });
        break;
      }
    }
  });
  return messages;
}

export const hubRequestArbitrary: fc.Arbitrary<HubRequest> = fc
  .record({
    system: fc.option(fc.string({ maxLength: 300 }), { nil: null }),
    segments: fc.array(segmentArbitrary, { maxLength: 40 }),
    temperature: fc.option(fc.double({ min: 0, max: 2, noNaN: true }), { nil: undefined }),
    withTools: fc.boolean(),
  })
  .map(({ system, segments, temperature, withTools }) => {
    const request: HubRequest = {
      model: "qwen-test",
      messages: buildHistory(segments, system),
      tools: withTools
        ? [
            { name: "move_arm", description: "Move the arm", parameters: { type: "object" } },
            { name: "capture_image", description: "Take a picture", parameters: { type: "object" } },
          ]
        : [],
      maxOutputTokens: 1024,
      ignored: [],
    };
    if (temperature !== undefined) request.temperature = temperature;
    return request;
  });
