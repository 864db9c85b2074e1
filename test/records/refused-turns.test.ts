/**
 * A refused turn is cheap, through the whole in-process app: a camera history is
 * resent with one more image that is refused (over the pixel limit), or to an
 * episode that has used its turns. The refusal comes before any image is
 * converted (nothing goes upstream), and its record refers to the blobs the
 * earlier turns stored instead of recording the history's images again: the
 * records grow by a few KB, not by the request's size.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { rgbNoisePng, solidColourPng } from "../../src/images/generate-png.ts";
import { directoryBytes } from "../../src/records/data-dir-budget.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { imageTurnRequest } from "../support/image-turn.ts";
import { createInProcessSidecar, type InProcessSidecar, postJson } from "../support/in-process-sidecar.ts";

let s: InProcessSidecar;
let upstreamRequests = 0;
beforeAll(async () => {
  s = await createInProcessSidecar({
    config: { images: { limits: { max_image_pixels: 320 * 240 } } },
    upstreamFetch: (request) => {
      upstreamRequests += 1;
      return s.scripted.fetch(request);
    },
  });
});
afterAll(() => s.stop());

const frames = Array.from({ length: 10 }, (_, i) => rgbNoisePng(160, 120, 40 + i).png.toBase64());
const history = (images: string[]) => imageTurnRequest("watch the table", images);

test("a refused turn converts nothing, sends nothing and records a few KB however large its history", async () => {
  const episode = s.createEpisode({ max_turns: 2 });
  const headers = { authorization: `Bearer ${episode.ingressKey}` };
  const path = `/e/${episode.id}/v1/responses`;
  const ok = await postJson(s.app, path, history(frames), headers);
  expect(ok.status).toBe(200);
  await ok.text();
  const recordsBytes = () => directoryBytes(s.dataDir);

  const tooLarge = history([...frames, Buffer.from(solidColourPng(400, 400, [9, 9, 9])).toBase64()]);
  const requestBytes = JSON.stringify(tooLarge).length;
  const sent = upstreamRequests;
  const before = recordsBytes();
  const refused = await postJson(s.app, path, tooLarge, headers);
  expect(refused.status).toBe(400);
  expect(await refused.text()).toContain("over the limit of 76800 pixels");
  expect(upstreamRequests).toBe(sent);
  const grown = recordsBytes() - before;
  // The new 400×400 PNG is the one blob it may add (a solid frame compresses to a few hundred bytes).
  expect(grown).toBeLessThan(8 * 1024);
  expect(grown / requestBytes).toBeLessThan(0.01);

  // The episode's last turn is used, and the next one is refused as closed, recorded the same way.
  const last = await postJson(s.app, path, history(frames.slice(0, 5)), headers);
  expect(last.status).toBe(200);
  await last.text();
  const beforeClosed = recordsBytes();
  const closed = await postJson(s.app, path, history(frames), headers);
  expect(closed.status).toBe(400);
  expect(recordsBytes() - beforeClosed).toBeLessThan(8 * 1024);
  expect(upstreamRequests).toBe(sent + 1);

  // The refused requests are still rebuilt byte for byte from their records and the blobs.
  const records = openRecords(s.dataDir);
  const exchanges = records.readEpisode(episode.id).exchanges;
  expect(exchanges.map((exchange) => exchange.stage("status")?.value.status)).toEqual([
    "delivered",
    "failed",
    "delivered",
    "failed",
  ]);
  expect(records.clientRequestText(exchanges[1] as (typeof exchanges)[number])).toBe(
    JSON.stringify(tooLarge),
  );
  expect(records.clientRequestText(exchanges[3] as (typeof exchanges)[number])).toBe(
    JSON.stringify(history(frames)),
  );
  expect(directoryBytes(join(s.dataDir, "blobs"))).toBeLessThan(frames.length * 200 * 1024);
});

test("an ended episode's frames leave the image cache; a frame another episode still uses stays", async () => {
  const post = (episode: ReturnType<InProcessSidecar["createEpisode"]>, images: string[]) =>
    postJson(s.app, `/e/${episode.id}/v1/responses`, history(images), {
      authorization: `Bearer ${episode.ingressKey}`,
    }).then((res) => res.text());
  const own = Array.from({ length: 3 }, (_, i) => rgbNoisePng(64, 48, 900 + i).png.toBase64());
  const [a, b] = [s.createEpisode(), s.createEpisode()];
  const cached = s.imageCache.entries;
  await post(a, [own[0] as string, own[1] as string]);
  await post(b, [own[1] as string, own[2] as string]);
  expect(s.imageCache.entries).toBe(cached + 3);
  await a.cancel();
  expect(s.imageCache.entries).toBe(cached + 2);
  b.fail("cancelled", "test over");
  expect(s.imageCache.entries).toBe(cached);
});
