/**
 * End to end: a long camera episode with the real, pinned Codex CLI against the
 * compiled binary. The scripted model calls the robot's observe tool on every
 * turn (30 observations, then finish, then a final text: 32 model turns); the
 * robot controller (HTTP executor) answers each observation with a new 640×480
 * noisy camera frame, which Codex sends back, with its whole history, on every
 * later turn. The episode uses the camera policy (body_budget). Asserted from
 * what the client, the sidecar and the upstream really exchanged:
 *   - records grow linearly: the bytes each turn adds to the data directory are
 *     about the same at turn 30 as at turn 2 (the history resent is not recorded
 *     again), and the whole directory is close to the distinct images it holds;
 *   - `records export --inline` rebuilds every client request byte for byte as a
 *     proxy in front of the sidecar saw it on the wire, and every upstream body as
 *     the upstream received it;
 *   - every frame the controller made reached upstream pixel-exact (its WebP decodes
 *     to the PNG's pixels), and every upstream body stayed under the provider limit.
 * Codex, because it starts its MCP servers before the first model request and
 * resends its history whole (no stored responses). Run against the instant scripted
 * model and a slow, throttling one (test/support/upstream-profiles-under-test.ts), where
 * retried attempts resend each turn's body verbatim and are recorded with its exchange.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadCodecs } from "../../src/images/codecs.ts";
import { directoryBytes } from "../../src/records/data-dir-budget.ts";
import {
  expectEpisodeRebuiltPixelExact,
  withCodexCameraEpisode,
} from "../support/camera-episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import {
  forEachUpstreamProfile,
  upstreamProfilesUnderTest,
} from "../support/upstream-profiles-under-test.ts";

const timeoutMs = 240_000;
const observations = 30;

describeInLoopbackNamespace(
  "long camera episode end to end",
  { file: import.meta.path, timeoutMs: timeoutMs * upstreamProfilesUnderTest.length },
  () =>
    forEachUpstreamProfile((profile) =>
      test(
        `Codex, ${observations} observed 640×480 frames: linear records, byte-exact reconstruction, every frame upstream pixel-exact${profile.label}`,
        async () => {
          const codecs = await loadCodecs();
          await withCodexCameraEpisode(
            { observations, profile, timeoutMs: timeoutMs - 30_000, recordSizes: true },
            async (camera) => {
              const { sidecar, proxy, episode } = camera;
              // Linear records: what turn k added (request k+1 saw it all written) is about the same
              // at the end as at the start. Turns 2…31 each carry one new frame (its PNG and WebP).
              const finalBytes = directoryBytes(sidecar.dataDir);
              const added = proxy.recordsBefore.map(
                (before, i) => (proxy.recordsBefore[i + 1] ?? finalBytes) - before,
              );
              const framed = added.slice(1, observations + 1);
              const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
              const early = mean(framed.slice(0, 10));
              const late = mean(framed.slice(-10));
              const distinctImages = directoryBytes(join(sidecar.dataDir, "blobs"));
              const figures = {
                early,
                late,
                min: Math.min(...framed),
                max: Math.max(...framed),
                finalBytes,
                distinctImages,
              };
              console.log(`records per framed turn: ${JSON.stringify(figures)}`);
              expect(late / early).toBeLessThan(1.25);
              expect(Math.max(...framed) / Math.min(...framed)).toBeLessThan(1.5);
              // Quadratic records (each history recorded whole) would be ~15× the images by turn 30.
              expect(finalBytes / distinctImages).toBeLessThan(1.3);

              // The records refer to images; the client's requests resent ~0.8 MB per frame each turn.
              expect(readFileSync(join(episode.records_dir, "exchanges.jsonl"), "utf8")).not.toContain(
                "iVBORw0KGgo",
              );
              // Byte-exact reconstruction from the records and blobs, by the binary's own reader.
              await expectEpisodeRebuiltPixelExact(codecs, camera, observations);
            },
          );
        },
        timeoutMs,
      ),
    ),
);
