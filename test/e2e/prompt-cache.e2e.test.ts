/**
 * End to end: the provider's prompt cache in a long camera episode with the real,
 * pinned Codex CLI against the compiled binary. The robot controller answers each of
 * 30 observations with a new 1280×720 camera-like frame (faint sensor noise, ~0.48 MB
 * as lossless WebP: ~9.7 fit under the 6 MiB limit), Codex resends its whole history
 * every turn, the episode runs body_budget, and the model is declared with Model
 * Studio's explicit cache, so the sidecar marks the prompt's stable prefix and the
 * scripted upstream plays the provider's cache accounting (docs/prompt-cache.md).
 * Asserted from what the client, the sidecar and the upstream really exchanged:
 *   - the cached tokens reach the client: Codex prints, in its `turn.completed` event,
 *     the cached input tokens it was told, and they are the sum of what the upstream
 *     reported on every exchange; most of the episode's input was served from the cache;
 *   - every request upstream had at most 4 markers, and every turn that only appended to
 *     the previous prompt hit the previous turn's entry;
 *   - every frame the controller made reached upstream pixel-exact, every body under the
 *     limit, and `records export --inline` rebuilds every client request byte for byte
 *     (as a proxy in front of the sidecar saw it) and every upstream body.
 * Run against the instant scripted model and a slow, throttling one
 * (test/support/upstream-profiles-under-test.ts): a retried attempt resends its turn's
 * body verbatim, and an answer cut mid-stream writes no cache entry.
 */
import { expect, test } from "bun:test";
import { loadCodecs } from "../../src/images/codecs.ts";
import { cameraLikeFrame } from "../../src/images/synthetic-frames.ts";
import { writePng } from "../../src/images/write-png.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { measureCacheEfficiency } from "../../src/upstream/cache-efficiency.ts";
import { listPromptBlocks } from "../../src/upstream/prompt-blocks.ts";
import {
  expectEpisodeRebuiltPixelExact,
  withCodexCameraEpisode,
} from "../support/camera-episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import {
  answeredWhole,
  forEachUpstreamProfile,
  upstreamProfilesUnderTest,
} from "../support/upstream-profiles-under-test.ts";

const timeoutMs = 300_000;
const observations = 30;

const frame1280 = (n: number) =>
  writePng({
    width: 1280,
    height: 720,
    colourType: 6,
    bitDepth: 8,
    rows: cameraLikeFrame(1280, 720, 9000 + n, 0.5).data,
  });

describeInLoopbackNamespace(
  "prompt cache end to end",
  { file: import.meta.path, timeoutMs: timeoutMs * upstreamProfilesUnderTest.length },
  () =>
    forEachUpstreamProfile((profile) =>
      test(
        `Codex, ${observations} observed 1280×720 frames, explicit cache: cached tokens reach the client, frames pixel-exact, records byte-exact${profile.label}`,
        async () => {
          const codecs = await loadCodecs();
          await withCodexCameraEpisode(
            {
              observations,
              profile,
              timeoutMs: timeoutMs - 40_000,
              frame: frame1280,
              config: { upstream: { models: { "qwen3-vl-plus": { cache: "explicit" } } } },
            },
            async (camera) => {
              const { upstream, sidecar, episode, run, turns } = camera;
              // The requests answered whole, one per turn: the cache accounting each turn's answer reported.
              const received = upstream.scripted.received.filter(answeredWhole);

              // What the upstream reported, as recorded with each exchange's validated answer.
              const exchanges = openRecords(sidecar.dataDir).readEpisode(episode.id).exchanges;
              type Usage = { inputTokens: number; cachedInputTokens?: number };
              const usages = exchanges.map((exchange) => {
                const line = exchange.stage("upstream_response")?.value as
                  | { validated?: { usage?: Usage } }
                  | undefined;
                return line?.validated?.usage ?? { inputTokens: 0 };
              });
              const cached = usages.reduce((sum, u) => sum + (u.cachedInputTokens ?? 0), 0);
              const input = usages.reduce((sum, u) => sum + u.inputTokens, 0);
              console.log(
                `cached ${cached} of ${input} input tokens (${((100 * cached) / input).toFixed(1)}%) over ${turns} turns`,
              );
              expect(cached / input).toBeGreaterThan(0.5);

              // Codex prints the usage it was told: every request's cached tokens, summed.
              const completed = run.stdout
                .split("\n")
                .flatMap((line) =>
                  line.startsWith("{") ? [JSON.parse(line) as Record<string, unknown>] : [],
                )
                .filter((event) => event.type === "turn.completed");
              expect(completed).toHaveLength(1);
              const printed = completed[0]?.usage as { input_tokens: number; cached_input_tokens: number };
              expect(printed).toMatchObject({ input_tokens: input, cached_input_tokens: cached });

              // Upstream: at most 4 markers; a turn that only appended hit the previous turn's whole prompt.
              const prompts = received.map((r) => listPromptBlocks(r.body as { messages: unknown }));
              prompts.forEach((blocks, i) => {
                expect(blocks.filter((b) => b.marked).length).toBeLessThanOrEqual(4);
                const before = prompts[i - 1];
                if (
                  before &&
                  measureCacheEfficiency(before, blocks).efficiency === 1 &&
                  blocks.length > before.length
                )
                  expect({ turn: i + 1, cached: usages[i]?.cachedInputTokens }).toEqual({
                    turn: i + 1,
                    cached: Math.min(
                      before.reduce((sum, b) => sum + b.tokens, 0),
                      usages[i]?.inputTokens ?? 0,
                    ),
                  });
              });

              // Byte-exact reconstruction from the records and blobs, by the binary's own reader.
              await expectEpisodeRebuiltPixelExact(codecs, camera, observations);
            },
          );
        },
        timeoutMs,
      ),
    ),
);
