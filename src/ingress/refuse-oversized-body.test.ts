import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configSchema } from "../config/schema.ts";
import type { Episode } from "../episodes/episode.ts";
import { loadCodecsOnFirstUse } from "../images/codecs.ts";
import { readJsonLines } from "../records/jsonl-file.ts";
import { composeApp } from "../server/compose.ts";
import { ingressProtocolOf } from "./refuse-ingress-request.ts";

const limit = 4_000;
const controlPassword = "pw-0123456789";
const codecs = loadCodecsOnFirstUse();

async function setup() {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-body-limit-"));
  const { app, episodes } = await composeApp({
    config: configSchema.parse({ data_dir: dataDir, body_limit_bytes: limit }),
    secrets: { upstreamApiKey: undefined, controlPassword },
    version: "test",
    codecs,
    baseUrl: () => "http://127.0.0.1:1",
    logLevel: "error",
    logWrite: () => {},
  });
  return { app, episode: episodes.create({ max_turns: 0, model: "qwen3-vl-plus" }) };
}

const big = JSON.stringify({ padding: "x".repeat(limit + 10) });
const message = `request body over the limit of ${limit} bytes (body_limit_bytes)`;

const protocols = {
  responses: {
    path: (id: string) => `/e/${id}/v1/responses`,
    headers: (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` }),
    envelope: { error: { message, type: "invalid_request_error", param: null, code: "request_too_large" } },
  },
  gemini: {
    path: (id: string) => `/e/${id}/gemini/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse`,
    headers: (key: string): Record<string, string> => ({ "x-goog-api-key": key }),
    envelope: { error: { code: 400, message, status: "INVALID_ARGUMENT" } },
  },
  messages: {
    path: (id: string) => `/e/${id}/anthropic/v1/messages`,
    headers: (key: string): Record<string, string> => ({ "x-api-key": key }),
    envelope: { type: "error", error: { type: "invalid_request_error", message } },
  },
} as const;

function streamOf(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += 1024) controller.enqueue(bytes.subarray(i, i + 1024));
      controller.close();
    },
  });
}

/** An episode's record lines of one file (none when it was never written). */
const recordLines = (episode: Episode, file: string) =>
  readJsonLines<Record<string, unknown>>(join(episode.records.dir, file)).entries;

describe("an oversized model request", () => {
  for (const [name, kit] of Object.entries(protocols)) {
    test(`${name}: a final 400 in the protocol's envelope, recorded without the body, sized or streamed`, async () => {
      const { app, episode } = await setup();
      for (const streamed of [false, true]) {
        const res = await app.request(kit.path(episode.id), {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...kit.headers(episode.ingressKey),
            // app.request sends no content-length of its own; a socket client does.
            ...(streamed ? {} : { "content-length": String(big.length) }),
          },
          body: streamed ? streamOf(big) : big,
          ...(streamed ? { duplex: "half" } : {}),
        } as RequestInit);
        expect(res.status).toBe(400);
        expect(await res.json()).toEqual(kit.envelope);
      }
      const aux = recordLines(episode, "auxiliary.jsonl");
      // The sized request is refused by its content-length, the streamed one once it passed the limit.
      const refusal = (contentLength: number | null) => ({
        protocol: name,
        operation: "body_limit",
        path: kit.path(episode.id),
        status: 400,
        reason: "body over body_limit_bytes",
        limit_bytes: limit,
        content_length: contentLength,
      });
      expect(aux.map(({ at: _, v: __, ...rest }) => rest)).toEqual([refusal(big.length), refusal(null)]);
      expect(JSON.stringify(aux)).not.toContain("xxxx");
      expect(recordLines(episode, "exchanges.jsonl")).toEqual([]);
      expect(episode.counters).toMatchObject({ auxiliary_responses: 2, failed_exchanges: 0 });
    });
  }

  test("a wrong key or an unknown episode: the same envelope, nothing recorded", async () => {
    const { app, episode } = await setup();
    for (const id of [episode.id, "ep_unknown0000000000"]) {
      const res = await app.request(protocols.messages.path(id), {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "ura_key_wrong" },
        body: big,
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(protocols.messages.envelope);
    }
    expect(recordLines(episode, "auxiliary.jsonl")).toEqual([]);
    expect(episode.counters.auxiliary_responses).toBe(0);
  });

  test("control and MCP keep the generic 413", async () => {
    const { app, episode } = await setup();
    for (const [path, auth] of [
      ["/control/episodes", controlPassword],
      [`/e/${episode.id}/mcp`, episode.mcpToken],
    ] as const) {
      const res = await app.request(path, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${auth}` },
        body: big,
      });
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({ error: { type: "request_too_large", message } });
    }
    expect(recordLines(episode, "auxiliary.jsonl")).toEqual([]);
  });
});

test("ingressProtocolOf: only the three ingress paths", () => {
  expect(ingressProtocolOf("/e/ep_1/v1/responses")).toEqual({ protocol: "responses", episodeId: "ep_1" });
  expect(ingressProtocolOf("/e/ep_1/gemini/v1beta/models/m:generateContent")).toEqual({
    protocol: "gemini",
    episodeId: "ep_1",
  });
  expect(ingressProtocolOf("/e/ep_1/anthropic/v1/messages/count_tokens")).toEqual({
    protocol: "messages",
    episodeId: "ep_1",
  });
  for (const other of [
    "/e/ep_1/mcp",
    "/control/episodes",
    "/e/ep_1/v1/responses/x",
    "/health",
    "/e//v1/responses",
  ])
    expect(ingressProtocolOf(other)).toBeUndefined();
});
