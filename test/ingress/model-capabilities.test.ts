/**
 * The model table drives the upstream request (in process, scripted upstream): the
 * episode's model sets the `max_tokens` clamp, recorded when it lowers the client's
 * value, and whether an image may go upstream.
 */
import { describe, expect, test } from "bun:test";
import type { ModelCapabilities } from "../../src/models/model-capabilities.ts";
import { records } from "../support/episode-evidence.ts";
import { createInProcessSidecar, postJson } from "../support/in-process-sidecar.ts";

const custom: ModelCapabilities = {
  context_window: 32768,
  max_input_tokens: 30720,
  max_output_tokens: 4096,
  image_input: false,
  video_input: false,
  thinking: "none",
  cache: "implicit",
  tool_calls: true,
};

const turn = (maxTokens: number, content: unknown = "Observe.") => ({
  model: "ura-qwen",
  max_tokens: maxTokens,
  messages: [{ role: "user", content }],
  tools: [{ name: "mcp__ura__observe", description: "observe", input_schema: { type: "object" } }],
});

async function setup() {
  const sidecar = await createInProcessSidecar({
    config: { upstream: { models: { "qwen-custom-32k": custom } } },
  });
  const post = (episodeId: string, key: string, body: unknown) =>
    postJson(sidecar.app, `/e/${episodeId}/anthropic/v1/messages`, body, { "x-api-key": key });
  return { ...sidecar, post };
}

describe("the episode's model capabilities shape the upstream request", () => {
  test("max_tokens over the model's max_output_tokens is lowered to it, and the record says so", async () => {
    const { createEpisode, scripted, post } = await setup();
    const episode = createEpisode({ max_turns: 0, model: "qwen-custom-32k" });
    expect((await post(episode.id, episode.ingressKey, turn(32000))).status).toBe(200);
    expect((scripted.received[0]?.body as { max_tokens: number } | undefined)?.max_tokens).toBe(4096);
    const sent = records(episode.records.dir, "exchanges").find((l) => l.stage === "upstream_request");
    expect(sent?.ignored).toContain(
      "max_output_tokens 32000 lowered to 4096 (max_output_tokens of model qwen-custom-32k: docs/models.md)",
    );
  });

  test("the default model (qwen3-vl-plus, 32K output) takes Claude Code's 32000 unchanged", async () => {
    const { createEpisode, scripted, post } = await setup();
    const episode = createEpisode();
    expect((await post(episode.id, episode.ingressKey, turn(32000))).status).toBe(200);
    expect((scripted.received[0]?.body as { max_tokens: number } | undefined)?.max_tokens).toBe(32000);
  });

  test("an image for a model without image input is a 400 naming the block; nothing goes upstream", async () => {
    const { createEpisode, scripted, post } = await setup();
    const episode = createEpisode({ max_turns: 0, model: "qwen-custom-32k" });
    const png =
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    const image = { type: "image", source: { type: "base64", media_type: "image/png", data: png } };
    const res = await post(episode.id, episode.ingressKey, turn(100, [image, { type: "text", text: "see" }]));
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { message: string } };
    expect(error.message).toContain("messages[0].content[0]");
    expect(error.message).toContain("does not take image input");
    expect(scripted.received).toHaveLength(0);
  });
});

describe("the model's input limit", () => {
  test("a prompt over the model's window is refused by the sidecar's window guard before the upstream sees it", async () => {
    const { createEpisode, scripted, post } = await setup();
    const episode = createEpisode({ max_turns: 0, model: "qwen-custom-32k" });
    // ~4 characters a token: 100,000 characters are about 25,000 tokens, 140,000 about 35,000.
    expect((await post(episode.id, episode.ingressKey, turn(100, "x".repeat(100_000)))).status).toBe(200);
    const res = await post(episode.id, episode.ingressKey, turn(100, "x".repeat(140_000)));
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { message: string } };
    // Nothing to omit: the user's text is protected, so the request fails before it is sent.
    expect(error.message).toContain("the model's window");
    expect(error.message).toContain("max_input_tokens 30720");
    expect(scripted.received.map((r) => r.fault ?? "answered")).toEqual(["answered"]);
  });

  test("the scripted upstream plays Model Studio's context-length 400 over the model's max_input_tokens", async () => {
    const { scripted } = await setup();
    const ask = (chars: number) =>
      scripted.fetch(
        new Request("http://upstream/v1/chat/completions", {
          method: "POST",
          body: JSON.stringify({
            model: "qwen-custom-32k",
            stream: true,
            messages: [{ role: "user", content: "x".repeat(chars) }],
          }),
        }),
      );
    expect((await ask(100_000)).status).toBe(200);
    const res = await ask(140_000);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("Range of input length should be [1, 30720]");
    expect(scripted.received.map((r) => r.fault ?? "answered")).toEqual(["answered", "input_too_long"]);
  });
});
