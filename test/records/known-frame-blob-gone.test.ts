/**
 * A frame's blob removed or damaged between the body splitter's on-disk check and the
 * stage that reads it (src/lib/known-frame.ts): the splitter kept the frame as a stand-in
 * and dropped its bytes, so that exchange cannot go on. What the client is told and what is
 * recorded: a retryable error in its protocol's envelope naming the image and why, a failed
 * exchange with that error, the episode still running; and the request sent again goes
 * through (no blob on disk: the splitter keeps the frame's text) and writes the blob again.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openRecords } from "../../src/records/read-records.ts";
import { cameraFrame, responsesCameraHistory } from "../support/camera-history-body.ts";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";

setDefaultTimeout(60_000);

let s: InProcessSidecar;
beforeAll(async () => {
  s = await createInProcessSidecar();
});
afterAll(() => s.stop());

const blobPath = (base64: string) =>
  join(s.dataDir, "blobs", "sha256", new Bun.CryptoHasher("sha256").update(base64, "base64").digest("hex"));

const body = (frames: string[]) => responsesCameraHistory(frames, { stream: false });

const post = (episode: { id: string; ingressKey: string }, payload: string | ReadableStream<Uint8Array>) =>
  s.app.request(`/e/${episode.id}/v1/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingressKey}` },
    body: payload,
  });

/** What happens to the first frame's blob while the request is under way. */
const changes = {
  removed: (path: string) => rmSync(path),
  // One byte changed: the same size, so only a read that checks the digest sees it.
  damaged: (path: string) => {
    const bytes = readFileSync(path);
    bytes[100] = (bytes[100] ?? 0) ^ 1;
    writeFileSync(path, bytes);
  },
} as const;

const told = {
  removed: "was removed from the sidecar's blob store while the request was processed",
  damaged: "could not be read back from the sidecar's blob store (damaged: set aside)",
};

for (const [change, apply] of Object.entries(changes) as [keyof typeof changes, (path: string) => void][])
  test(`a frame's blob ${change} after the splitter kept it as a stand-in: a retryable error naming the image, a recorded failure, and the retry goes through`, async () => {
    const episode = s.createEpisode();
    // Seven noisy frames (~190 KB each): a body over a MiB, which the splitter takes apart.
    const seed = change === "removed" ? 900 : 950;
    const earlier = Array.from({ length: 7 }, (_, i) => cameraFrame(seed + i));
    const [first, latest] = [earlier[0] as string, cameraFrame(seed + 7)];
    expect((await post(episode, body(earlier))).status).toBe(200);

    // The same frames again and a new one: the splitter keeps the ones it knows as stand-ins
    // (their blobs are on disk), then the first one's blob changes before any stage reads it,
    // and the converted images are no longer cached (the stage that converts them reads the blobs).
    s.imageCache.release(episode.id);
    const text = body([...earlier, latest]);
    const cut = text.indexOf(latest);
    const pieces = new TextEncoder();
    const standInsBefore = s.knownTexts.counts().standIns;
    let sendRest: () => void = () => {};
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(pieces.encode(text.slice(0, cut)));
        sendRest = () => {
          controller.enqueue(pieces.encode(text.slice(cut)));
          controller.close();
        };
      },
    });
    const answered = post(episode, stream);
    while (s.knownTexts.counts().standIns < standInsBefore + earlier.length) await Bun.sleep(5);
    apply(blobPath(first));
    sendRest();
    const res = await answered;
    const answer = (await res.json()) as { error: { message: string; type: string } };

    expect({ status: res.status, type: answer.error.type }).toEqual({ status: 503, type: "server_error" });
    expect(answer.error.message).toBe(
      `an image of this request (sha256:${blobPath(first).split("/").at(-1)}) ${told[change]}; nothing was delivered, send the request again`,
    );
    expect(answer.error.message).not.toContain(s.dataDir);

    const exchanges = openRecords(s.dataDir).readEpisode(episode.id).exchanges;
    expect(exchanges[1]?.line("status")).toMatchObject({
      status: "failed",
      error: { http_status: 503, message: answer.error.message },
    });
    expect(exchanges[1]?.line("upstream_request")).toBeUndefined();
    expect(episode.describe().state).toBe("running");

    // Sent again: no blob on disk, so the splitter keeps the frame's text, the exchange goes
    // through, and the blob is written again as the bytes that arrived.
    expect((await post(episode, text)).status).toBe(200);
    expect(new Bun.CryptoHasher("sha256").update(readFileSync(blobPath(first))).digest("hex")).toBe(
      blobPath(first).split("/").at(-1) as string,
    );
  });
