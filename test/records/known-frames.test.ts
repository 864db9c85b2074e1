/**
 * A camera history's frames are known by the SHA-256 of their text across turns
 * (src/lib/known-texts.ts): what was derived from a frame (its checks, digests, PNG
 * header, blob reference) is reused when the same text comes again, never when a
 * different one does. Histories that change between turns in the ways that would
 * expose a stale reuse (a frame changed by one pixel in the middle, two frames
 * swapped, a frame dropped, the same frame twice, one base64 character changed in a
 * frame), and a process that loses a frame's blob or its image cache between turns, go
 * through body_budget with a provider limit that leaves the oldest frames out, for the
 * Responses, the Messages and the Gemini ingress: each turn's upstream body and record
 * lines are the full path's byte for byte (the same turns with every fact forgotten
 * before each request), the records rebuild the bodies sent, every frame seen before
 * came as a stand-in that never became a string (src/lib/known-frame.ts) unless its blob
 * was gone, and no request's strings stay registered once it is answered.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { referencedDigests } from "../../src/records/image-references.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { cameraFrame, responsesCameraHistory } from "../support/camera-history-body.ts";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";

setDefaultTimeout(120_000);

let s: InProcessSidecar;
/** Every episode of this file: the image cache is emptied by releasing each. */
const episodeIds: string[] = [];
const upstreamBodies: string[] = [];
beforeAll(async () => {
  s = await createInProcessSidecar({
    config: {
      context: { policy: "body_budget" },
      images: { limits: { max_request_bytes: 700 * 1024 } },
    },
    upstreamFetch: async (request) => {
      upstreamBodies.push(await request.clone().text());
      return s.scripted.fetch(request);
    },
  });
});
afterAll(() => s.stop());

type Ingress = {
  name: string;
  route: (id: string) => string;
  headers: (key: string) => Record<string, string>;
  body: (frames: string[]) => string;
};

const ingresses: Ingress[] = [
  {
    name: "Responses",
    route: (id) => `/e/${id}/v1/responses`,
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (frames) => responsesCameraHistory(frames, { stream: true }),
  },
  {
    name: "Messages",
    route: (id) => `/e/${id}/anthropic/v1/messages?beta=true`,
    headers: (key) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
    body: (frames) =>
      JSON.stringify({
        model: "claude-sonnet-4-5",
        max_tokens: 1024,
        stream: true,
        tools: [{ name: "observe", input_schema: { type: "object", properties: {} } }],
        messages: [
          { role: "user", content: [{ type: "text", text: "watch" }] },
          ...frames.flatMap((data, i) => [
            {
              role: "assistant",
              content: [{ type: "tool_use", id: `toolu_${i}`, name: "observe", input: {} }],
            },
            {
              role: "user",
              content: [
                {
                  type: "tool_result",
                  tool_use_id: `toolu_${i}`,
                  content: [
                    { type: "text", text: `frame ${i}` },
                    { type: "image", source: { type: "base64", media_type: "image/png", data } },
                  ],
                },
              ],
            },
          ]),
        ],
      }),
  },
  {
    name: "Gemini",
    route: (id) => `/e/${id}/gemini/v1beta/models/${s.config.upstream.model}:streamGenerateContent?alt=sse`,
    headers: (key) => ({ "x-goog-api-key": key }),
    body: (frames) =>
      JSON.stringify({
        contents: [
          { role: "user", parts: [{ text: "watch" }] },
          ...frames.flatMap((data, i) => [
            { role: "model", parts: [{ functionCall: { name: "observe", args: {}, id: `call_${i}` } }] },
            {
              role: "user",
              parts: [
                {
                  functionResponse: { name: "observe", response: { output: `frame ${i}` }, id: `call_${i}` },
                },
                { inlineData: { mimeType: "image/png", data } },
              ],
            },
          ]),
        ],
        tools: [
          { functionDeclarations: [{ name: "observe", parameters: { type: "object", properties: {} } }] },
        ],
      }),
  },
];

/**
 * What happens to the process between two turns of the known run only (the full path
 * forgets every fact anyway): a frame's blob deleted from disk, or the image cache emptied.
 */
type Between = { deleteBlobsOf?: string[]; emptyImageCache?: boolean };

/** The histories of the turns: frames appended, then changed in each way a stale reuse would show. */
function turns(): { histories: string[][]; between: Map<number, Between> } {
  const f = Array.from({ length: 13 }, (_, i) => cameraFrame(700 + i));
  const oneCharacter = (text: string) => {
    const at = Math.floor(text.length / 2);
    return text.slice(0, at) + (text[at] === "A" ? "B" : "A") + text.slice(at + 1);
  };
  const history = f.slice(0, 8);
  const out = [history.slice()];
  history.push(f[8] as string);
  out.push(history.slice());
  // One pixel changed in a frame in the middle: another PNG of the same size.
  history[4] = cameraFrame(704, 320 * 120 + 160);
  out.push(history.slice());
  // Two frames swapped.
  [history[2], history[3]] = [history[3] as string, history[2] as string];
  out.push(history.slice());
  // A frame dropped, and a new one.
  history.splice(5, 1);
  history.push(f[9] as string);
  out.push(history.slice());
  // The same frame twice (the newest resent as the next).
  history.push(history.at(-1) as string);
  out.push(history.slice());
  // One base64 character changed in the newest frame (its text no longer the one seen).
  history.push(f[10] as string);
  out.push(history.slice());
  // The blobs of the newest frame (sent upstream) and of the oldest (left out) deleted from disk.
  const between = new Map<number, Between>();
  between.set(out.length, { deleteBlobsOf: [f[10] as string, history[0] as string] });
  history.push(f[11] as string);
  out.push(history.slice());
  // The image cache emptied: the frames sent are converted again, from their blobs.
  between.set(out.length, { emptyImageCache: true });
  history.push(f[12] as string);
  out.push(history.slice());
  // (f[10] with one character changed no longer decodes; not every such change is caught.)
  history[history.length - 1] = oneCharacter(f[10] as string);
  out.push(history.slice());
  return { histories: out, between };
}

function sha256OfBase64(base64: string): string {
  return new Bun.CryptoHasher("sha256").update(base64, "base64").digest("hex");
}

/** How many of a turn's frames (each time it occurs) were sent whole on an earlier turn, their blob still on disk. */
function knownFrames(histories: string[][], turn: number, between: Map<number, Between>): number {
  const deleted = new Set(between.get(turn)?.deleteBlobsOf ?? []);
  const seen = new Set(histories.slice(0, turn).flat());
  return (histories[turn] ?? []).filter((frame) => seen.has(frame) && !deleted.has(frame)).length;
}

/** The record lines of an exchange that hold the bodies, without what differs between episodes. */
function bodyLines(dataDir: string, episodeId: string): string[] {
  const records = openRecords(dataDir);
  return records.readEpisode(episodeId).exchanges.flatMap((exchange) =>
    (["client_request", "upstream_request"] as const).map((stage) => {
      const line = exchange.stage(stage);
      return JSON.stringify({
        stage,
        body: line?.value?.body ?? null,
        digests: referencedDigests(line?.text ?? ""),
      });
    }),
  );
}

describe("a camera history's frames, known across turns by the digest of their text", () => {
  for (const ingress of ingresses) {
    test(`${ingress.name}: changed, swapped, dropped and repeated frames give the full path's upstream bodies and records`, async () => {
      const { histories, between } = turns();
      const post = async (episode: { id: string; ingressKey: string }, body: string) => {
        const before = upstreamBodies.length;
        const res = await s.app.request(ingress.route(episode.id), {
          method: "POST",
          headers: { "content-type": "application/json", ...ingress.headers(episode.ingressKey) },
          body,
        });
        const answer = await res.text();
        return {
          status: res.status,
          answer: res.status === 200 ? "" : answer,
          wire: upstreamBodies.slice(before).join("\n"),
        };
      };

      // The full path: every fact forgotten before each request.
      const full = s.createEpisode();
      episodeIds.push(full.id);
      const fullTurns = [];
      for (const history of histories) {
        s.knownTexts.forget();
        fullTurns.push(await post(full, ingress.body(history)));
      }
      // The last turn's newest frame no longer decodes: refused (400) the same way on both paths.
      expect(fullTurns.map((turn) => turn.status)).toEqual([...histories.slice(1).map(() => 200), 400]);

      // The same turns with the facts of earlier turns known.
      s.knownTexts.forget();
      const known = s.createEpisode();
      episodeIds.push(known.id);
      const knownTurns = [];
      let reused = 0;
      const standIns: number[] = [];
      const materialisedBefore = s.knownTexts.counts().materialised;
      for (const [turn, history] of histories.entries()) {
        const change = between.get(turn);
        for (const base64 of change?.deleteBlobsOf ?? [])
          rmSync(join(s.dataDir, "blobs", "sha256", sha256OfBase64(base64)));
        if (change?.emptyImageCache) {
          for (const id of episodeIds) s.imageCache.release(id);
          expect(s.imageCache.entries).toBe(0);
        }
        const before = s.knownTexts.counts();
        knownTurns.push(await post(known, ingress.body(history)));
        reused += s.knownTexts.counts().reused - before.reused;
        standIns.push(s.knownTexts.counts().standIns - before.standIns);
        expect(s.knownTexts.counts().live).toBe(0);
      }
      // Every frame seen on an earlier turn came as a stand-in (known-frame.ts), except those
      // whose blob was deleted; and no stage needed a stand-in's text.
      expect(standIns).toEqual(histories.map((_history, turn) => knownFrames(histories, turn, between)));
      expect(s.knownTexts.counts().materialised).toBe(materialisedBefore);
      // Facts were reused (the test would not show a stale reuse otherwise), and nothing was different.
      expect(reused).toBeGreaterThan(histories.length * 8);
      expect(knownTurns).toEqual(fullTurns);
      expect(bodyLines(s.dataDir, known.id)).toEqual(bodyLines(s.dataDir, full.id));
      const records = openRecords(s.dataDir);
      const exchanges = records.readEpisode(known.id).exchanges;
      expect(exchanges.map((exchange) => records.clientRequestText(exchange))).toEqual(
        histories.map(ingress.body),
      );
      expect(exchanges.map((exchange) => records.upstreamRequestText(exchange))).toEqual(
        knownTurns.map((turn) => turn.wire || undefined),
      );
    });
  }
});
