/**
 * A camera episode under body_budget through the whole in-process app: a new frame
 * in a tool result every turn, the whole history resent (as the Responses clients
 * do). Every turn is answered, every upstream body is under the provider limit,
 * and the newest frames are the ones that reach upstream.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { contextPolicySchema } from "../../src/context/policy-schema.ts";
import { rgbNoisePng } from "../../src/images/generate-png.ts";
import { openRecords } from "../../src/records/read-records.ts";
import {
  createInProcessSidecar,
  type InProcessSidecar,
  inProcessControlPassword,
} from "../support/in-process-sidecar.ts";
import { frameOutput, observeInput } from "../support/observe-responses-request.ts";

const limit = 500_000;
let s: InProcessSidecar;
const bodies: string[] = [];
beforeAll(async () => {
  s = await createInProcessSidecar({
    config: { images: { limits: { max_request_bytes: limit } } },
    upstreamFetch: async (request) => {
      bodies.push(await request.clone().text());
      return s.scripted.fetch(request);
    },
  });
});
afterAll(() => s.stop());

const frames = Array.from({ length: 20 }, (_, i) => rgbNoisePng(160, 120, i + 1).png.toBase64());

function turnRequest(turns: number) {
  const input = observeInput(
    [{ type: "input_text", text: "Watch the table; observe every turn." }],
    Array.from({ length: turns }, (_, i) => frameOutput(i, frames[i])),
  );
  return {
    model: "ura-qwen",
    stream: true,
    store: false,
    input,
    tools: [
      {
        type: "function",
        name: "ura_observe",
        description: "observe",
        parameters: { type: "object", properties: {} },
      },
    ],
  };
}

/** An episode under body_budget keeping 2 recent tool images, omitted 2 at a time; and a turn posted to it. */
function budgetEpisode() {
  const episode = s.createEpisode({
    max_turns: 0,
    context: contextPolicySchema.parse({
      policy: "body_budget",
      min_recent_tool_images: 2,
      image_eviction_batch_size: 2,
    }),
  });
  const post = (request: ReturnType<typeof turnRequest>) =>
    s.app.request(`/e/${episode.id}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingressKey}` },
      body: JSON.stringify(request),
    });
  return { episode, post };
}

test("body_budget keeps a long camera episode under the provider limit with its newest frames", async () => {
  const { episode, post } = budgetEpisode();
  const omitted: number[] = [];
  for (let turns = 1; turns <= frames.length; turns++) {
    const res = await post(turnRequest(turns));
    await res.text();
    expect(res.status).toBe(200);
    const body = bodies.at(-1) as string;
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(limit);
    const sent = JSON.parse(body) as { messages: { content: unknown }[] };
    const images = JSON.stringify(sent.messages).match(/data:image\/webp;base64,/g)?.length ?? 0;
    omitted.push(turns - images);
    // The newest frame always goes on.
    expect(JSON.stringify(sent.messages)).toContain(`frame ${turns - 1}`);
    expect(images).toBeGreaterThanOrEqual(Math.min(turns, 2));
  }
  // Without the budget the body would pass the limit from about the 7th frame on.
  expect(omitted.at(-1)).toBeGreaterThanOrEqual(8);
  expect(omitted.every((n) => n % 2 === 0)).toBe(true);
  const records = openRecords(s.dataDir);
  const last = records.readEpisode(episode.id).exchanges.at(-1);
  // The one decision, in after_context: the body as sent, measured exactly.
  const afterContext = last?.line("after_context");
  expect(afterContext?.decision?.reduced).toBe(true);
  expect(afterContext?.decision?.body_budget?.bytes_after).toBe(Buffer.byteLength(bodies.at(-1) ?? ""));
  expect(afterContext?.decision?.body_budget?.bytes_after).toBeLessThanOrEqual(limit);
  expect(afterContext?.request).toBe("as in the upstream request");
  expect(last?.line("upstream_request")?.context).toBeUndefined();
  expect(records.upstreamRequestText(last as never)).toBe(bodies.at(-1));
  // /metrics counts what body_budget omitted, as it counts sliding_window's omissions.
  const metrics = await s.app.request("/metrics", {
    headers: { authorization: `Bearer ${inProcessControlPassword}` },
  });
  const exposition = await metrics.text();
  const counted = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(exposition)?.[1]);
  expect(counted("ura_context_images_omitted_total")).toBe(omitted.reduce((sum, n) => sum + n, 0));
  expect(counted("ura_context_blocks_removed_total")).toBe(0);
});

test("a damaged frame the budget drops is never decoded: the turn is answered; the same frame sent is refused naming its field", async () => {
  const { episode, post } = budgetEpisode();
  // A valid PNG structure (signature, IHDR, chunks, IEND) around pixel data the decoder rejects.
  const damaged = Buffer.from(frames[0] as string, "base64");
  damaged[50] = (damaged[50] ?? 0) ^ 0xff;
  const oldest = turnRequest(frames.length);
  const withDamaged = (request: ReturnType<typeof turnRequest>, at: number) => {
    const item = request.input[at] as { output: { image_url?: string }[] };
    (item.output[1] as { image_url: string }).image_url = `data:image/png;base64,${damaged.toBase64()}`;
    return request;
  };
  const dropped = await post(withDamaged(oldest, 2));
  expect(dropped.status).toBe(200);
  await dropped.text();
  expect(bodies.at(-1)).toContain("[image omitted by the context policy: tool result call_0, image 1]");
  const records = openRecords(s.dataDir);
  const exchange = records.readEpisode(episode.id).exchanges.at(-1);
  const line = exchange?.stage("upstream_request")?.value as { images?: { leftOut: number } } | undefined;
  expect(line?.images?.leftOut).toBeGreaterThan(0);
  // Recorded as the client sent it, damaged frame included.
  expect(records.clientRequestText(exchange as never)).toBe(JSON.stringify(oldest));

  const newest = withDamaged(turnRequest(frames.length), 2 * frames.length);
  const refused = await post(newest);
  expect(refused.status).toBe(400);
  const error = ((await refused.json()) as { error: { param: string; message: string } }).error;
  expect(error.param).toBe(`input[${2 * frames.length}].output[1].image_url`);
  expect(error.message).toContain("the decoder rejected its data");
});
