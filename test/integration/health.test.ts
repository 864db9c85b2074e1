/**
 * Container probes against the compiled binary: /health/live answers while the
 * process runs; /health/ready turns 503 with a reason when the data directory
 * cannot take a write, while the image codecs still warm up (the socket opens
 * before that), and while a shutdown drains admitted work. Needs `make build`.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { rgbNoisePng } from "../../src/images/generate-png.ts";
import { openRecords } from "../../src/records/read-records.ts";
import {
  callbackInFlight,
  fileUpstream,
  responsesRequest,
  startSidecar,
  waitFor,
} from "../support/lifecycle-kit.ts";
import { startSidecarProcess } from "../support/sidecar-process.ts";

const upstream = await fileUpstream(30_000);

async function probe(url: string) {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as { status: string; reasons?: string[] } };
}

/** The socket opens before the codecs are warm: ready comes a moment after the banner. */
async function ready(sidecar: { url: string }): Promise<void> {
  await waitFor("ready", async () =>
    (await probe(`${sidecar.url}/health/ready`)).status === 200 ? true : undefined,
  );
}

describe("health probes of the compiled binary", () => {
  test("live and ready on a fresh start; ready 503 naming the data directory while it is gone", async () => {
    const sidecar = await startSidecarProcess();
    try {
      expect(await probe(`${sidecar.url}/health/live`)).toEqual({ status: 200, body: { status: "live" } });
      await ready(sidecar);
      expect(await probe(`${sidecar.url}/health/ready`)).toEqual({ status: 200, body: { status: "ready" } });
      expect((await probe(`${sidecar.url}/health`)).body.status).toBe("ok");

      rmSync(sidecar.dataDir, { recursive: true, force: true });
      const gone = await probe(`${sidecar.url}/health/ready`);
      expect(gone.status).toBe(503);
      expect(gone.body).toEqual({
        status: "not_ready",
        reasons: [`data directory not writable: ENOENT ${sidecar.dataDir}`],
      });
      expect((await probe(`${sidecar.url}/health/live`)).status).toBe(200);

      mkdirSync(sidecar.dataDir);
      expect((await probe(`${sidecar.url}/health/ready`)).status).toBe(200);
    } finally {
      await sidecar.stop();
    }
  });

  test("listens before its codecs are warm: ready 503 naming them, and a PNG sent at once still goes up as WebP", async () => {
    // cwebp's default effort (-z6), so that the warm-up encode outlasts the first probe on any machine.
    const sidecar = await startSidecar(upstream, { images: { webp: { method: 6, quality: 75 } } });
    try {
      const early = await probe(`${sidecar.url}/health/ready`);
      expect(early).toEqual({
        status: 503,
        body: { status: "not_ready", reasons: ["image codecs are still warming up"] },
      });
      const episode = await sidecar.createEpisode({});
      const png = rgbNoisePng(64, 48, 5).png;
      const answer = await responsesRequest(episode, [
        {
          role: "user",
          content: [
            { type: "input_text", text: "look" },
            {
              type: "input_image",
              image_url: `data:image/png;base64,${Buffer.from(png).toString("base64")}`,
            },
          ],
        },
      ]);
      expect(answer.status).toBe(200);
      const records = openRecords(sidecar.dataDir);
      const [exchange] = records.readEpisode(episode.id).exchanges;
      const sent = JSON.parse(records.upstreamRequestText(exchange as NonNullable<typeof exchange>) ?? "{}");
      expect(JSON.stringify(sent)).toContain('"url":"data:image/webp;base64,');
      await ready(sidecar);
    } finally {
      await sidecar.stop();
    }
  });

  test("while SIGTERM drains an admitted callback: ready 503 (draining), live 200, then exit 0", async () => {
    const sidecar = await startSidecar(upstream, {
      executor: { kind: "inert", receipt_delay_ms: 1_500 },
      shutdown: { drain_deadline_ms: 10_000 },
    });
    await ready(sidecar);
    const { executing } = await callbackInFlight(sidecar, upstream);
    sidecar.proc.kill("SIGTERM");
    // The signal is handled asynchronously: wait for the probe to turn, then say why it did.
    const draining = await waitFor("ready to turn 503", async () => {
      const answer = await probe(`${sidecar.url}/health/ready`);
      return answer.status === 503 ? answer : undefined;
    });
    expect(draining.body.reasons).toEqual(["draining: shutdown in progress, new exchanges are refused"]);
    expect((await probe(`${sidecar.url}/health/live`)).status).toBe(200);
    expect((await executing).isError).toBeFalsy();
    expect(await sidecar.proc.exited).toBe(0);
  });
});
