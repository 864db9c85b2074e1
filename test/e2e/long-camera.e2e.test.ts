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
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadCodecs, type RgbaImage } from "../../src/images/codecs.ts";
import { directoryBytes } from "../../src/records/data-dir-budget.ts";
import { longEpisodeReply } from "../../src/scripted-upstream/long-episode-reply.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
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

const timeoutMs = 240_000;
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

/**
 * A pass-through proxy in front of the sidecar's Responses route that keeps every
 * request body exactly as the client put it on the wire, and the size of the data
 * directory when each request arrived (the records of every earlier turn are complete
 * by then: the client sends its next turn only after the previous answer and its tool
 * call).
 */
function serveCapturingProxy(target: string, dataDir: string) {
  const bodies: Uint8Array[] = [];
  const recordsBefore: number[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const body = new Uint8Array(await req.arrayBuffer());
      if (req.method === "POST" && url.pathname.endsWith("/responses")) {
        bodies.push(body);
        recordsBefore.push(directoryBytes(dataDir));
      }
      const headers = new Headers(req.headers);
      headers.delete("host");
      headers.delete("content-length");
      const res = await fetch(`${target}${url.pathname}${url.search}`, {
        method: req.method,
        headers,
        ...(req.method === "GET" || req.method === "HEAD" ? {} : { body }),
      });
      // Read whole before it is passed on: the sidecar's delivery always completes, even when
      // the client leaves before the proxy has copied the last bytes (a delivery still open at
      // shutdown overran the drain deadline).
      const answer = await res.arrayBuffer();
      const answerHeaders = new Headers(res.headers);
      for (const name of ["content-length", "transfer-encoding", "content-encoding"])
        answerHeaders.delete(name);
      return new Response(answer, { status: res.status, headers: answerHeaders });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, bodies, recordsBefore, stop: () => server.stop(true) };
}

describeInLoopbackNamespace(
  "long camera episode end to end",
  { file: import.meta.path, timeoutMs: timeoutMs * upstreamProfilesUnderTest.length },
  () =>
    forEachUpstreamProfile((profile) =>
      test(
        `Codex, ${observations} observed 640×480 frames: linear records, byte-exact reconstruction, every frame upstream pixel-exact${profile.label}`,
        async () => {
          assertPrerequisites("codex");
          const codecs = await loadCodecs();
          const controller = serveCameraController();
          const upstream = await serveScriptedUpstream(0, {
            decide: longEpisodeReply(observations),
            profile: profile.profile,
          });
          const sidecar = await startSidecarProcess({
            upstreamUrl: upstream.url,
            config: { log_level: "warn", executor: { kind: "http", url: controller.url, poll_wait_ms: 0 } },
          });
          const proxy = serveCapturingProxy(sidecar.url, sidecar.dataDir);
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
            const run = await runClient("codex", sidecar, proxied, { timeoutMs: timeoutMs - 30_000 });
            const status = await sidecar.episode(episode.id);
            if (run.code !== 0 || status.state !== "finished")
              console.error(`${run.context}\nepisode: ${JSON.stringify(status)}`);
            expect(run.code).toBe(0);
            expect(status.state).toBe("finished");
            const turns = observations + 2;
            const received = upstream.scripted.received;
            const evidence = expectOneAnswerPerExchange(received, records(episode.records_dir, "exchanges"));
            console.log(`upstream${profile.label}: ${JSON.stringify(evidence)}`);
            expect(received.filter(answeredWhole)).toHaveLength(turns);
            // One client request per turn: the sidecar's retries and keepalives left Codex nothing to resend.
            expect(proxy.bodies).toHaveLength(turns);
            expect(controller.frames).toHaveLength(observations);

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
            clientBodies.forEach((body, i) => {
              expect(Buffer.from(body, "utf8").equals(Buffer.from(proxy.bodies[i] ?? []))).toBe(true);
            });
            const upstreamBodies = stageLines("upstream_request").map(splicedBody);
            expect(upstreamBodies).toHaveLength(turns);
            // Each turn's body is what the upstream received, every retry of it the same bytes.
            const sent = bodiesOncePerExchange(received);
            expect(sent).toHaveLength(turns);
            upstreamBodies.forEach((body, i) => {
              expect(body).toBe(sent[i] as string);
              expect(Buffer.byteLength(body)).toBeLessThanOrEqual(providerLimit);
            });
            // The records refer to images; the client's requests resent ~0.8 MB per frame each turn.
            expect(readFileSync(join(episode.records_dir, "exchanges.jsonl"), "utf8")).not.toContain(
              "iVBORw0KGgo",
            );

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
