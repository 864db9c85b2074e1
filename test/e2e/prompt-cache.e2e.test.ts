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
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadCodecs, type RgbaImage } from "../../src/images/codecs.ts";
import { cameraLikeFrame } from "../../src/images/synthetic-frames.ts";
import { writePng } from "../../src/images/write-png.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { longEpisodeReply } from "../../src/scripted-upstream/long-episode-reply.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { measureCacheEfficiency } from "../../src/upstream/cache-efficiency.ts";
import { listPromptBlocks } from "../../src/upstream/prompt-blocks.ts";
import { serveCameraController } from "../support/camera-controller.ts";
import { assertPrerequisites, runClient } from "../support/client-run.ts";
import { records } from "../support/episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { runBinary, startSidecarProcess } from "../support/sidecar-process.ts";
import {
  answeredWhole,
  bodiesOncePerExchange,
  expectOneAnswerPerExchange,
  forEachUpstreamProfile,
  upstreamProfilesUnderTest,
} from "../support/upstream-profiles-under-test.ts";

const timeoutMs = 300_000;
const observations = 30;
const providerLimit = 6 * 1024 * 1024;

const pixels = (image: RgbaImage) =>
  createHash("sha256").update(`${image.width}x${image.height}`).update(image.data).digest("hex");

/** The JSON text spliced last into a record line as `"body":…` (docs/records.md). */
function splicedBody(line: string): string {
  const at = line.indexOf(',"body":');
  if (at < 0 || !line.endsWith("}")) throw new Error(`no spliced body in ${line.slice(0, 200)}`);
  return line.slice(at + ',"body":'.length, -1);
}

/** A pass-through proxy keeping every Responses request body as the client put it on the wire. */
function serveCapturingProxy(target: string) {
  const bodies: Uint8Array[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const body = new Uint8Array(await req.arrayBuffer());
      if (req.method === "POST" && url.pathname.endsWith("/responses")) bodies.push(body);
      const headers = new Headers(req.headers);
      headers.delete("host");
      headers.delete("content-length");
      const res = await fetch(`${target}${url.pathname}${url.search}`, {
        method: req.method,
        headers,
        ...(req.method === "GET" || req.method === "HEAD" ? {} : { body }),
      });
      const answer = await res.arrayBuffer();
      const answerHeaders = new Headers(res.headers);
      for (const name of ["content-length", "transfer-encoding", "content-encoding"])
        answerHeaders.delete(name);
      return new Response(answer, { status: res.status, headers: answerHeaders });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, bodies, stop: () => server.stop(true) };
}

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
          assertPrerequisites("codex");
          const codecs = await loadCodecs();
          const controller = serveCameraController({ frame: frame1280 });
          const upstream = await serveScriptedUpstream(0, {
            decide: longEpisodeReply(observations),
            profile: profile.profile,
          });
          const sidecar = await startSidecarProcess({
            upstreamUrl: upstream.url,
            config: {
              log_level: "warn",
              executor: { kind: "http", url: controller.url, poll_wait_ms: 0 },
              upstream: { models: { "qwen3-vl-plus": { cache: "explicit" } } },
            },
          });
          const proxy = serveCapturingProxy(sidecar.url);
          try {
            const episode = await sidecar.createEpisode({
              client: "codex",
              context: { policy: "body_budget" },
            });
            const origin = new URL(sidecar.url).origin;
            const proxied = {
              ...episode,
              urls: { ...episode.urls, responses: episode.urls.responses.replace(origin, proxy.url) },
            };
            const run = await runClient("codex", sidecar, proxied, { timeoutMs: timeoutMs - 40_000 });
            const status = await sidecar.episode(episode.id);
            if (run.code !== 0 || status.state !== "finished")
              console.error(`${run.context}\nepisode: ${JSON.stringify(status)}`);
            expect(run.code).toBe(0);
            expect(status.state).toBe("finished");
            const turns = observations + 2;
            const evidence = expectOneAnswerPerExchange(
              upstream.scripted.received,
              records(episode.records_dir, "exchanges"),
            );
            console.log(`upstream${profile.label}: ${JSON.stringify(evidence)}`);
            // The requests answered whole, one per turn: the cache accounting each turn's answer reported.
            const received = upstream.scripted.received.filter(answeredWhole);
            expect(received).toHaveLength(turns);
            expect(controller.frames).toHaveLength(observations);

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
              .flatMap((line) => (line.startsWith("{") ? [JSON.parse(line) as Record<string, unknown>] : []))
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
            const out = join(sidecar.dataDir, "..", `export-${episode.id}.jsonl`);
            const exported = await runBinary([
              "records",
              "export",
              episode.id,
              "--inline",
              "--data-dir",
              sidecar.dataDir,
              "--out",
              out,
            ]);
            expect(exported).toMatchObject({ code: 0 });
            const lines = readFileSync(out, "utf8").trimEnd().split("\n");
            const stageLines = (stage: string) => lines.filter((line) => line.includes(`"stage":"${stage}"`));
            const clientBodies = stageLines("client_request").map(splicedBody);
            expect(clientBodies).toHaveLength(turns);
            expect(proxy.bodies).toHaveLength(turns);
            clientBodies.forEach((body, i) => {
              expect(Buffer.from(body, "utf8").equals(Buffer.from(proxy.bodies[i] ?? []))).toBe(true);
            });
            const upstreamBodies = stageLines("upstream_request").map(splicedBody);
            expect(upstreamBodies).toHaveLength(turns);
            // Each turn's body is what the upstream received, every retry of it the same bytes.
            const sent = bodiesOncePerExchange(upstream.scripted.received);
            expect(sent).toHaveLength(turns);
            upstreamBodies.forEach((body, i) => {
              expect(body).toBe(sent[i] as string);
              expect(Buffer.byteLength(body)).toBeLessThanOrEqual(providerLimit);
            });

            // Every frame reached upstream pixel-exact, as lossless WebP.
            const upstreamWebps = new Set<string>();
            for (const body of upstreamBodies)
              for (const m of body.matchAll(/"data:image\/webp;base64,([A-Za-z0-9+/=]+)"/g))
                upstreamWebps.add(
                  pixels(codecs.decodeWebp(new Uint8Array(Buffer.from(m[1] ?? "", "base64")))),
                );
            const frames = controller.frames.map((png) => pixels(codecs.decodePng(png)));
            expect(frames.filter((frame) => !upstreamWebps.has(frame))).toEqual([]);
            expect(new Set(frames).size).toBe(observations);
          } finally {
            proxy.stop();
            const exit = await sidecar.stop();
            if (exit !== 0) console.error(`sidecar exit ${exit}:\n${sidecar.output().slice(-4000)}`);
            expect(exit).toBe(0);
            upstream.stop();
            controller.stop();
          }
        },
        timeoutMs,
      ),
    ),
);
