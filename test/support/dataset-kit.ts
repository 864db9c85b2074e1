/**
 * Synthetic episode records for the dataset export's unit tests (tests only):
 * a data directory with episodes whose exchanges.jsonl lines have the stages the
 * sidecar records — the client's request (an OpenAI Responses body with PNG
 * frames), the after-context decision, the upstream wire request (the frames as
 * lossless WebP, inline or as blob references), the validated response and the
 * status — so each test can break one thing and see what the export says.
 */
import { createHash } from "node:crypto";
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Codecs } from "../../src/images/codecs.ts";
import { solidColourPng } from "../../src/images/generate-png.ts";
import { webpSettingsSchema } from "../../src/images/settings.ts";

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
  /** Images go upstream as blob references instead of data URLs. */
  blobs?: boolean;
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

function writeBlob(dataDir: string, bytes: Uint8Array): string {
  const hex = createHash("sha256").update(bytes).digest("hex");
  mkdirSync(join(dataDir, "blobs", "sha256"), { recursive: true });
  writeFileSync(join(dataDir, "blobs", "sha256", hex), bytes);
  return hex;
}

/** Writes one episode; returns its records directory. */
export function writeEpisode(dataDir: string, spec: EpisodeSpec, codecs: Codecs): string {
  const dir = join(dataDir, "episodes", spec.id);
  mkdirSync(dir, { recursive: true });
  const state = spec.state ?? "finished";
  writeFileSync(
    join(dir, "episode.json"),
    JSON.stringify({
      id: spec.id,
      created_at: spec.createdAt ?? "2026-12-01T10:00:00.000Z",
      state,
      failure: state === "failed" ? { reason: "provider_error", message: "upstream failed" } : null,
      result: spec.submitted === false ? null : { submitted: true, answer: "red" },
      model: spec.model ?? "qwen3-vl-plus",
      client: spec.client ?? "opencode",
    }),
  );
  const system = { role: "system", content: "You drive a robot." };
  const user = { role: "user", content: "Observe, then finish with the colour." };
  const chat: Record<string, unknown>[] = [system, user];
  const responses: Record<string, unknown>[] = [{ role: "system", content: system.content }, user];
  const lines: unknown[] = [];
  let frame = 0;
  spec.turns.forEach((turn, n) => {
    const exchange = `ex_${String(n + 1).padStart(4, "0")}`;
    const at = `2026-12-01T10:00:${String(n).padStart(2, "0")}.000Z`;
    lines.push({
      at,
      exchange,
      stage: "client_request",
      protocol: "responses",
      path: "/v1/responses",
      body: { input: [...responses] },
    });
    lines.push({
      at,
      exchange,
      stage: "after_context",
      request: "identical to the translated request",
      decision: { policy: "identity", reduced: false },
    });
    lines.push({
      at,
      exchange,
      stage: "upstream_request",
      images: {},
      ignored: [],
      body: {
        model: "qwen3-vl-plus",
        messages: [...chat],
        tools: [finishTool, observeTool],
        parallel_tool_calls: true,
      },
    });
    const toolCalls = (turn.calls ?? []).map((c, i) => ({ id: `call_${n + 1}_${i}`, ...c }));
    lines.push({
      at,
      exchange,
      stage: "upstream_response",
      attempts: [],
      raw: "",
      validated: {
        id: `chatcmpl-${n}`,
        model: "qwen3-vl-plus",
        text: turn.text ?? null,
        toolCalls,
        finishReason: toolCalls.length ? "tool_calls" : "stop",
      },
    });
    lines.push({ at, exchange, stage: "status", status: turn.status ?? "delivered", batch: null });
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
      const url = spec.blobs
        ? { $blob: `sha256:${writeBlob(dataDir, webp)}`, media_type: "image/webp", bytes: webp.length }
        : `data:image/webp;base64,${Buffer.from(webp).toString("base64")}`;
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
  appendFileSync(join(dir, "exchanges.jsonl"), lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
  if (spec.frozen ?? state !== "running")
    writeFileSync(join(dir, "frozen.json"), JSON.stringify({ reason: "test", complete: true }));
  return dir;
}

/** The smoke-like trajectory: observe, observe, finish, final text. */
export const smokeTurns: Turn[] = [
  { calls: [{ name: "ura_observe", arguments: "{}" }] },
  { calls: [{ name: "ura_observe", arguments: "{}" }] },
  { calls: [{ name: "ura_finish", arguments: '{"answer":"red"}' }] },
  { text: "Done: the scene was red." },
];
