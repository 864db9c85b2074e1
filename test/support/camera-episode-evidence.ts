/**
 * A long camera episode with the real, pinned Codex CLI through the compiled binary, and
 * its evidence (tests only), shared by the end-to-end tests that run one (long-camera,
 * prompt-cache): the episode itself (the scripted model observing on every turn, a robot
 * controller making a new frame per observation, body_budget, a slow upstream or not),
 * a pass-through proxy that keeps every Responses request body as the client put it on the wire, the
 * byte-exact rebuild of every client request and upstream body by `records export
 * --inline`, and every frame the robot's camera made reaching the upstream pixel-exact
 * as lossless WebP.
 */
import { expect } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Codecs, RgbaImage } from "../../src/images/codecs.ts";
import { directoryBytes } from "../../src/records/data-dir-budget.ts";
import type { ReceivedRequest } from "../../src/scripted-upstream/create-scripted-upstream.ts";
import { longEpisodeReply } from "../../src/scripted-upstream/long-episode-reply.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { serveCameraController } from "./camera-controller.ts";
import { assertPrerequisites, type ClientRun, runClient, type Upstream } from "./client-run.ts";
import { settledExchanges } from "./episode-evidence.ts";
import {
  type EpisodeStatus,
  type LaunchInfo,
  runBinary,
  type SidecarProcess,
  startSidecarProcess,
} from "./sidecar-process.ts";
import {
  answeredWhole,
  bodiesOncePerExchange,
  expectOneAnswerPerExchange,
  type UpstreamProfileUnderTest,
} from "./upstream-profiles-under-test.ts";

/** A digest of an image's pixels and size: equal for a PNG and the lossless WebP made of it. */
export const pixels = (image: RgbaImage): string =>
  createHash("sha256").update(`${image.width}x${image.height}`).update(image.data).digest("hex");

/** The JSON text spliced last into a record line as `"body":…` (docs/records.md). */
export function splicedBody(line: string): string {
  const at = line.indexOf(',"body":');
  if (at < 0 || !line.endsWith("}")) throw new Error(`no spliced body in ${line.slice(0, 200)}`);
  return line.slice(at + ',"body":'.length, -1);
}

/** A proxy in front of the sidecar's Responses route. */
export interface CapturingProxy {
  url: string;
  /** Every Responses request body, as the client sent it. */
  bodies: Uint8Array[];
  /** With a data directory: its size when each of those requests arrived. */
  recordsBefore: number[];
  stop(): void;
}

/**
 * A pass-through proxy to `target` keeping every Responses request body exactly as the
 * client put it on the wire and, given `dataDir`, the size of the data directory when each
 * request arrived (the records of every earlier turn are complete by then: the client
 * sends its next turn only after the previous answer and its tool call).
 */
export function serveCapturingProxy(target: string, dataDir?: string): CapturingProxy {
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
        if (dataDir !== undefined) recordsBefore.push(directoryBytes(dataDir));
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

/**
 * `records export --inline` (the binary's own reader) rebuilds every client request byte
 * for byte as the proxy saw it, and every upstream body as the upstream received it
 * (each retry of a turn the same bytes), each under the provider's limit. Returns the
 * upstream bodies, one per turn.
 */
export async function expectRecordsRebuildEpisode(options: {
  dataDir: string;
  episodeId: string;
  clientBodies: readonly Uint8Array[];
  received: readonly ReceivedRequest[];
  turns: number;
  providerLimitBytes: number;
}): Promise<string[]> {
  const { dataDir, episodeId, turns } = options;
  const out = join(dataDir, "..", `export-${episodeId}.jsonl`);
  const exported = await runBinary([
    "records",
    "export",
    episodeId,
    "--inline",
    "--data-dir",
    dataDir,
    "--out",
    out,
  ]);
  expect(exported).toMatchObject({ code: 0 });
  const lines = readFileSync(out, "utf8").trimEnd().split("\n");
  const stageLines = (stage: string) => lines.filter((line) => line.includes(`"stage":"${stage}"`));
  const clientBodies = stageLines("client_request").map(splicedBody);
  expect(clientBodies).toHaveLength(turns);
  expect(options.clientBodies).toHaveLength(turns);
  clientBodies.forEach((body, i) => {
    expect(Buffer.from(body, "utf8").equals(Buffer.from(options.clientBodies[i] ?? []))).toBe(true);
  });
  const upstreamBodies = stageLines("upstream_request").map(splicedBody);
  expect(upstreamBodies).toHaveLength(turns);
  const sent = bodiesOncePerExchange(options.received);
  expect(sent).toHaveLength(turns);
  upstreamBodies.forEach((body, i) => {
    expect(body).toBe(sent[i] as string);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(options.providerLimitBytes);
  });
  return upstreamBodies;
}

/** Every frame the camera made (PNG) reached the upstream pixel-exact as lossless WebP; all distinct. */
export function expectFramesPixelExact(
  codecs: Codecs,
  upstreamBodies: readonly string[],
  framesMade: readonly Uint8Array[],
  observations: number,
): void {
  const upstreamWebps = new Set<string>();
  for (const body of upstreamBodies)
    for (const m of body.matchAll(/"data:image\/webp;base64,([A-Za-z0-9+/=]+)"/g))
      upstreamWebps.add(pixels(codecs.decodeWebp(new Uint8Array(Buffer.from(m[1] ?? "", "base64")))));
  const frames = framesMade.map((png) => pixels(codecs.decodePng(png)));
  expect(frames.filter((frame) => !upstreamWebps.has(frame))).toEqual([]);
  expect(new Set(frames).size).toBe(observations);
}

/** Model Studio's limit on a request body: every upstream body of a camera episode stays under it. */
export const providerLimitBytes = 6 * 1024 * 1024;

/**
 * A finished camera episode's records rebuild it byte for byte, under the provider's limit
 * (expectRecordsRebuildEpisode), and every frame the camera made reached the upstream
 * pixel-exact (expectFramesPixelExact). Returns the upstream bodies, one per turn.
 */
export async function expectEpisodeRebuiltPixelExact(
  codecs: Codecs,
  camera: CameraEpisode,
  observations: number,
): Promise<string[]> {
  const upstreamBodies = await expectRecordsRebuildEpisode({
    dataDir: camera.sidecar.dataDir,
    episodeId: camera.episode.id,
    clientBodies: camera.proxy.bodies,
    received: camera.upstream.scripted.received,
    turns: camera.turns,
    providerLimitBytes,
  });
  expectFramesPixelExact(codecs, upstreamBodies, camera.controller.frames, observations);
  return upstreamBodies;
}

/** A finished camera episode: everything that took part, for the test's own checks. */
export interface CameraEpisode {
  /** The robot's camera: every frame it made, in order. */
  controller: { url: string; frames: Uint8Array[]; stop(): void };
  upstream: Upstream;
  sidecar: SidecarProcess;
  proxy: CapturingProxy;
  episode: LaunchInfo;
  run: ClientRun;
  status: EpisodeStatus;
  /** Model turns: every observation, the finish, the final text. */
  turns: number;
}

/**
 * Codex through `observations` observed frames (`frame`, default 640×480) on body_budget
 * against the scripted upstream playing `profile`, its requests through a capturing proxy
 * (recording the data directory's size at each one with `recordSizes`). Asserts what
 * every such episode must show — Codex exited 0, the episode finished, one answered
 * upstream request and one client request per turn, every retried attempt recorded with
 * its exchange, one frame per observation — then hands it to `check`; afterwards the
 * sidecar must stop with exit 0.
 */
export async function withCodexCameraEpisode(
  options: {
    observations: number;
    profile: UpstreamProfileUnderTest;
    timeoutMs: number;
    frame?: (n: number) => Uint8Array;
    /** More of the sidecar's config (the executor is the camera controller). */
    config?: Record<string, unknown>;
    recordSizes?: boolean;
  },
  check: (episode: CameraEpisode) => Promise<void>,
): Promise<void> {
  assertPrerequisites("codex");
  const controller = serveCameraController(options.frame ? { frame: options.frame } : {});
  const upstream = await serveScriptedUpstream(0, {
    decide: longEpisodeReply(options.observations),
    profile: options.profile.profile,
  });
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    config: {
      log_level: "warn",
      executor: { kind: "http", url: controller.url, poll_wait_ms: 0 },
      ...options.config,
    },
  });
  const proxy = serveCapturingProxy(sidecar.url, options.recordSizes ? sidecar.dataDir : undefined);
  try {
    const episode = await sidecar.createEpisode({ client: "codex", context: { policy: "body_budget" } });
    const origin = new URL(sidecar.url).origin;
    const proxied = {
      ...episode,
      urls: { ...episode.urls, responses: episode.urls.responses.replace(origin, proxy.url) },
    };
    const run = await runClient("codex", sidecar, proxied, { timeoutMs: options.timeoutMs });
    const status = await sidecar.episode(episode.id);
    if (run.code !== 0 || status.state !== "finished")
      console.error(`${run.context}\nepisode: ${JSON.stringify(status)}`);
    expect(run.code).toBe(0);
    expect(status.state).toBe("finished");
    const turns = options.observations + 2;
    const received = upstream.scripted.received;
    const evidence = expectOneAnswerPerExchange(received, await settledExchanges(episode.records_dir));
    console.log(`upstream${options.profile.label}: ${JSON.stringify(evidence)}`);
    expect(received.filter(answeredWhole)).toHaveLength(turns);
    // One client request per turn: the sidecar's retries and keepalives left Codex nothing to resend.
    expect(proxy.bodies).toHaveLength(turns);
    expect(controller.frames).toHaveLength(options.observations);
    await check({ controller, upstream, sidecar, proxy, episode, run, status, turns });
  } finally {
    proxy.stop();
    const exit = await sidecar.stop();
    if (exit !== 0) console.error(`sidecar exit ${exit}:\n${sidecar.output().slice(-4000)}`);
    expect(exit).toBe(0);
    upstream.stop();
    controller.stop();
  }
}
