/**
 * kill -9 while camera frames are being stored: two clients send a new frame on
 * every turn (each a new PNG blob and a new WebP blob, fsync'ed in the background),
 * and the sidecar is killed at a random moment, several times on the same data
 * directory. However the kill falls between a blob's write, its fsync and the
 * line that refers to it, no record line ever refers to a blob that is not on disk
 * whole: every reference of every line resolves to bytes matching its digest.
 * The delays are random; the seed is printed on failure. Needs `make build`.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { rgbNoisePng } from "../../src/images/generate-png.ts";
import { referencedDigests } from "../../src/records/image-references.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { imageTurnRequest } from "../support/image-turn.ts";
import { seededRandom } from "../support/lifecycle-kit.ts";
import { type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

setDefaultTimeout(120_000);

test("kill -9 during blob writes: every reference in every record line resolves to a whole blob", async () => {
  const seed = Number(process.env.URA_KILL_SEED ?? Date.now() % 100_000);
  const next = seededRandom(seed);
  let dataDir: string | undefined;
  let frame = 0;
  let referenced = 0;
  try {
    for (let round = 0; round < 8; round++) {
      const sidecar: SidecarProcess = await startSidecarProcess(dataDir ? { dataDir } : {});
      dataDir = sidecar.dataDir;
      let killed = false;
      // Killed only once frames are being stored (the first one answered), at a random moment after.
      const answered = Promise.withResolvers<void>();
      const client = async () => {
        const launch = await sidecar.createEpisode({ max_turns: 0 });
        while (!killed) {
          frame += 1;
          const png = rgbNoisePng(640, 480, frame).png.toBase64();
          await fetch(`${launch.urls.responses}/responses`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${launch.ingress_key}` },
            body: JSON.stringify(imageTurnRequest(`frame ${frame}`, [png])),
          })
            .then(async (res) => {
              await res.text();
              if (res.status === 200) answered.resolve();
            })
            .catch(() => undefined);
        }
      };
      const clients = [client(), client()];
      await answered.promise;
      await Bun.sleep(Math.floor(next() * 600));
      killed = true;
      sidecar.proc.kill("SIGKILL");
      await sidecar.proc.exited;
      await Promise.all(clients);

      const records = openRecords(dataDir);
      for (const id of records.episodeIds()) {
        const episode = records.readEpisode(id);
        for (const line of episode.exchanges.flatMap((exchange) => exchange.lines)) {
          for (const digest of referencedDigests(line.text)) {
            // Missing or not whole: read throws naming the digest.
            expect(records.blobs.read(digest).length).toBeGreaterThan(0);
            referenced += 1;
          }
          expect(() => records.inlineLine(line)).not.toThrow();
        }
      }
    }
    // Frames were really stored and referenced before the kills.
    expect(referenced).toBeGreaterThan(4);
  } catch (error) {
    throw new Error(`kill-during-blob-writes failed with URA_KILL_SEED=${seed}: ${(error as Error).message}`);
  }
});
