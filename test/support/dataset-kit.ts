/**
 * Synthetic episode records for the dataset export's unit tests (tests only):
 * a data directory with episodes whose exchanges.jsonl lines have the stages the
 * sidecar records — the client's request (an OpenAI Responses body with PNG
 * frames), the after-context decision, the upstream wire request (the frames as
 * lossless WebP), the validated response and the status — written through the
 * records writer, as the sidecar writes them (images into the blob store), so
 * each test can break one thing and see what the export says.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Codecs } from "../../src/images/codecs.ts";
import { solidColourPng } from "../../src/images/generate-png.ts";
import { webpSettingsSchema } from "../../src/images/settings.ts";
import { createBlobStore } from "../../src/records/blob-store.ts";
import { createEpisodeRecords } from "../../src/records/episode-records.ts";
import { identicalRequest } from "../../src/records/exchange-lines.ts";
import { noImages } from "./exchange-line-fields.ts";
import { hubResponse } from "./hub-kit.ts";

export const observeTool = {
  type: "function",
  function: {
    name: "ura_observe",
    description: "Look at the scene.",
    parameters: { type: "object", properties: {}, additionalProperties: false },
  },
};
export const finishTool = {
  type: "function",
  function: {
    name: "ura_finish",
    description: "Finish with the colour.",
    parameters: {
      type: "object",
      properties: { answer: { type: "string" } },
      required: ["answer"],
      additionalProperties: false,
    },
  },
};

export type Turn = {
  /** Tool calls the model answers with; none = a text answer. */
  calls?: { name: string; arguments: string }[];
  text?: string;
  status?: "delivered" | "revoked";
};

export type EpisodeSpec = {
  id: string;
  state?: "finished" | "failed" | "running" | "interrupted";
  submitted?: boolean;
  client?: string;
  model?: string;
  createdAt?: string;
  /** The model's answers, one per exchange; each observe result carries one frame. */
  turns: Turn[];
  frozen?: boolean;
};

const colours: [number, number, number][] = [
  [200, 30, 30],
  [30, 200, 30],
  [30, 30, 200],
  [200, 200, 30],
];

export function createDataDir(): string {
  return mkdtempSync(join(tmpdir(), "ura-dataset-"));
}

/** Writes one episode; returns its records directory. */
export function writeEpisode(dataDir: string, spec: EpisodeSpec, codecs: Codecs): string {
  const dir = join(dataDir, "episodes", spec.id);
  let now = Date.parse(spec.createdAt ?? "2026-12-01T10:00:00.000Z");
  const records = createEpisodeRecords({
    dir,
    clock: () => now,
    redact: (line) => line,
    blobs: createBlobStore(dataDir, { fsync: false }),
  });
  const state = spec.state ?? "finished";
  records.describe({
    id: spec.id,
    created_at: spec.createdAt ?? "2026-12-01T10:00:00.000Z",
    state,
    failure: state === "failed" ? { reason: "provider_error", message: "upstream failed" } : null,
    result: spec.submitted === false ? null : { submitted: true, answer: "red" },
    model: spec.model ?? "qwen3-vl-plus",
    client: spec.client ?? "opencode",
  });
  const system = { role: "system", content: "You drive a robot." };
  const user = { role: "user", content: "Observe, then finish with the colour." };
  const chat: Record<string, unknown>[] = [system, user];
  const responses: Record<string, unknown>[] = [{ role: "system", content: system.content }, user];
  let frame = 0;
  spec.turns.forEach((turn, n) => {
    const exchange = `ex_${String(n + 1).padStart(4, "0")}`;
    now = Date.parse(`2026-12-01T10:00:${String(n).padStart(2, "0")}.000Z`);
    records.clientRequest(
      exchange,
      { protocol: "responses", path: "/v1/responses" },
      { json: JSON.stringify({ input: responses }) },
    );
    const estimate = { estimate_before: 0, estimate_after: 0, images_omitted: [], blocks_removed: [] };
    records.afterContext(exchange, {
      request: identicalRequest,
      decision: { policy: "identity", reduced: false, ...estimate },
    });
    records.upstreamRequest(
      exchange,
      { images: noImages, ignored: [] },
      JSON.stringify({
        model: "qwen3-vl-plus",
        messages: chat,
        tools: [finishTool, observeTool],
        parallel_tool_calls: true,
      }),
    );
    const toolCalls = (turn.calls ?? []).map((c, i) => ({ id: `call_${n + 1}_${i}`, ...c }));
    records.upstreamResponse(exchange, {
      attempts: [],
      raw: "",
      validated: hubResponse({
        id: `chatcmpl-${n}`,
        text: turn.text ?? null,
        toolCalls,
        finishReason: toolCalls.length ? "tool_calls" : "stop",
      }),
    });
    records.status(
      exchange,
      turn.status === "revoked"
        ? { status: "revoked", reason: "test", frames_sent: 0, batch: null }
        : { status: "delivered", batch: null },
    );
    if ((turn.status ?? "delivered") !== "delivered") return;
    chat.push({
      role: "assistant",
      content: turn.text ?? null,
      ...(toolCalls.length
        ? {
            tool_calls: toolCalls.map((c) => ({
              id: c.id,
              type: "function",
              function: { name: c.name, arguments: c.arguments },
            })),
          }
        : {}),
    });
    for (const call of toolCalls) {
      responses.push({ type: "function_call", call_id: call.id, name: call.name, arguments: call.arguments });
      if (call.name !== "ura_observe") {
        chat.push({ role: "tool", tool_call_id: call.id, content: "done" });
        responses.push({ type: "function_call_output", call_id: call.id, output: "done" });
        continue;
      }
      const rgb = colours[frame++ % colours.length] ?? [0, 0, 0];
      const png = solidColourPng(8, 6, rgb);
      const webp = codecs.encodeWebpLossless(codecs.decodePng(png), webpSettingsSchema.parse({}));
      const url = `data:image/webp;base64,${Buffer.from(webp).toString("base64")}`;
      chat.push({
        role: "tool",
        tool_call_id: call.id,
        content: `nonce: n${frame}\n[1 image(s) from this result follow in the next user message]`,
      });
      chat.push({
        role: "user",
        content: [
          { type: "text", text: `Image(s) returned by tool call ${call.id} (ura_observe):` },
          { type: "image_url", image_url: { url } },
        ],
      });
      responses.push({
        type: "function_call_output",
        call_id: call.id,
        output: [
          { type: "input_text", text: `nonce: n${frame}` },
          { type: "input_image", image_url: `data:image/png;base64,${Buffer.from(png).toString("base64")}` },
        ],
      });
    }
  });
  if (spec.frozen ?? state !== "running") records.freeze({ reason: "test", complete: true });
  return dir;
}

/** The smoke-like trajectory: observe, observe, finish, final text. */
export const smokeTurns: Turn[] = [
  { calls: [{ name: "ura_observe", arguments: "{}" }] },
  { calls: [{ name: "ura_observe", arguments: "{}" }] },
  { calls: [{ name: "ura_finish", arguments: '{"answer":"red"}' }] },
  { text: "Done: the scene was red." },
];
