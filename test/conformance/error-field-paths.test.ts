/**
 * An error raised after translation (here: an image the converter rejects, and
 * an image for a text-only model) names the field in the client's own request —
 * `input[2].output[1].image_url`, `contents[2].parts[1].inlineData`,
 * `messages[2].content[0].content[1].source` — not the hub location
 * (`messages[i].content[j]`) the user never saw. Against the compiled binary, in
 * each protocol's envelope.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { solidColourPng } from "../../src/images/generate-png.ts";
import { ingressKits, type ProtocolName } from "../support/ingress-kit.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

const notPng = "data:image/png;base64,AAAAAAAA";
const bare = notPng.slice("data:image/png;base64,".length);

/** A second turn answering one call, whose result carries text then the bad image; and the path to expect. */
const turns: Record<ProtocolName, { body: Record<string, unknown>; field: string }> = {
  responses: {
    field: "input[2].output[1].image_url",
    body: {
      model: "ura-qwen",
      input: [
        { role: "user", content: "go" },
        { type: "function_call", call_id: "c1", name: "ura_observe", arguments: "{}" },
        {
          type: "function_call_output",
          call_id: "c1",
          output: [
            { type: "input_text", text: "frame" },
            { type: "input_image", image_url: notPng },
          ],
        },
      ],
      tools: [{ type: "function", name: "ura_observe", parameters: { type: "object" } }],
    },
  },
  gemini: {
    field: "contents[2].parts[1].inlineData",
    body: {
      contents: [
        { role: "user", parts: [{ text: "go" }] },
        { role: "model", parts: [{ functionCall: { id: "c1", name: "mcp_ura_observe", args: {} } }] },
        {
          role: "user",
          parts: [
            { functionResponse: { id: "c1", name: "mcp_ura_observe", response: { output: "frame" } } },
            { inlineData: { mimeType: "image/png", data: bare } },
          ],
        },
      ],
      tools: [
        { functionDeclarations: [{ name: "mcp_ura_observe", parametersJsonSchema: { type: "object" } }] },
      ],
    },
  },
  messages: {
    field: "messages[2].content[0].content[1].source",
    body: {
      model: "claude-sonnet-4-5",
      max_tokens: 256,
      messages: [
        { role: "user", content: "go" },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "c1", name: "mcp__ura__observe", input: {} }],
        },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "c1",
              content: [
                { type: "text", text: "frame" },
                { type: "image", source: { type: "base64", media_type: "image/png", data: bare } },
              ],
            },
          ],
        },
      ],
      tools: [{ name: "mcp__ura__observe", input_schema: { type: "object" } }],
    },
  },
};

let sidecar: SidecarProcess;
let textOnly: SidecarProcess;
beforeAll(async () => {
  sidecar = await startSidecarProcess();
  const config = join(mkdtempSync(join(tmpdir(), "ura-text-only-")), "config.json");
  writeFileSync(config, JSON.stringify({ upstream: { image_input: false } }));
  textOnly = await startSidecarProcess({ args: ["--config", config] });
}, 30_000);
afterAll(async () => {
  await sidecar?.stop();
  await textOnly?.stop();
});

async function post(on: SidecarProcess, episode: LaunchInfo, protocol: ProtocolName, body: unknown) {
  const kit = ingressKits[protocol];
  const res = await fetch(`${on.url}${kit.path(episode.id, "qwen3-vl-plus", false)}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...kit.headers(episode.ingress_key) },
    body: JSON.stringify(body),
  });
  return { status: res.status, envelope: kit.readError(res.status, await res.json()) };
}

describe("errors after translation name the client's own field", () => {
  for (const protocol of ["responses", "gemini", "messages"] as const) {
    test(`${protocol}: an image that is not a PNG → 400 naming ${turns[protocol].field}`, async () => {
      const episode = await sidecar.createEpisode({ model: "qwen3-vl-plus" });
      const { status, envelope } = await post(sidecar, episode, protocol, turns[protocol].body);
      expect(status).toBe(400);
      expect(envelope.message).toStartWith(`${turns[protocol].field}: image/png data is not a valid PNG`);
      expect(envelope.message).not.toMatch(/^messages\[\d+\]\.content\[\d+\]:/);
    });
  }

  test("an image for a text-only model names the client's field too", async () => {
    const episode = await textOnly.createEpisode({ model: "qwen3-vl-plus" });
    const png = `data:image/png;base64,${Buffer.from(solidColourPng(4, 4, [10, 20, 30])).toString("base64")}`;
    const body = JSON.parse(JSON.stringify(turns.responses.body).replace(notPng, png));
    const { status, envelope } = await post(textOnly, episode, "responses", body);
    expect(status).toBe(400);
    expect(envelope.message).toStartWith("input[2].output[1].image_url: model");
    expect(envelope.message).toContain("does not take image input");
  });
});
