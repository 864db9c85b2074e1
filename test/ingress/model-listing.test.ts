/**
 * Model listings on each ingress (in process, the whole app): the episode's model with
 * its real limits in each protocol's shape, behind the route's own credentials, errors
 * in the protocol's envelope, and not a model request (no pin or MCP check, no turn).
 * Claude Code's request is the one it was captured sending (fixtures/models/); the
 * Responses listing is read by the official OpenAI SDK.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import OpenAI from "openai";
import { builtinModels } from "../../src/models/builtin-models.ts";
import { createInProcessSidecar } from "../support/in-process-sidecar.ts";

const plus = builtinModels["qwen3-vl-plus"];
if (!plus) throw new Error("qwen3-vl-plus is in the built-in table");

async function setup() {
  const sidecar = await createInProcessSidecar({ config: { mcp_required: "refuse" } });
  const episode = sidecar.createEpisode();
  const get = (path: string, headers: Record<string, string>) =>
    Promise.resolve(sidecar.app.request(`/e/${episode.id}${path}`, { headers }));
  return { ...sidecar, episode, get };
}

const capture = (name: string) =>
  JSON.parse(
    readFileSync(resolve(import.meta.dir, "../../fixtures/models", name, "client-request.json"), "utf8"),
  ) as { method: string; path: string; headers: Record<string, string> };

describe("Anthropic Messages route: GET /anthropic/v1/models", () => {
  test("Claude Code's captured discovery request gets one page with the episode's model and its limits", async () => {
    const { episode, get } = await setup();
    const request = capture("claude-models-list");
    const headers = { ...request.headers, "x-api-key": episode.ingressKey };
    const res = await get(`/anthropic${request.path}`, headers);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      data: [
        {
          type: "model",
          id: "qwen3-vl-plus",
          display_name: "qwen3-vl-plus",
          created_at: "1970-01-01T00:00:00Z",
          max_input_tokens: plus.max_input_tokens,
          max_tokens: plus.max_output_tokens,
          capabilities: null,
          lifecycle: "active",
          deprecated_at: null,
          retires_at: null,
          line: null,
        },
      ],
      has_more: false,
      first_id: "qwen3-vl-plus",
      last_id: "qwen3-vl-plus",
    });
    // Twice, before any MCP connection, with mcp_required refuse: a listing is no model request.
    expect((await get(`/anthropic${request.path}`, headers)).status).toBe(200);
    expect(episode.describe()).toMatchObject({ counters: { delivered_exchanges: 0 } });
  });

  test("one model by id; another id is a 404 and a wrong key a 401, in Anthropic's envelope", async () => {
    const { episode, get } = await setup();
    const key = { "x-api-key": episode.ingressKey };
    const one = (await (await get("/anthropic/v1/models/qwen3-vl-plus", key)).json()) as { id: string };
    expect(one.id).toBe("qwen3-vl-plus");
    const other = await get("/anthropic/v1/models/claude-opus-4-6", key);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({
      type: "error",
      error: {
        type: "not_found_error",
        message: `model "claude-opus-4-6" is not served by episode ${episode.id}: its model is qwen3-vl-plus`,
      },
    });
    const wrong = await get("/anthropic/v1/models", { "x-api-key": "nope" });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { type: string }).type).toBe("error");
  });
});

describe("Responses route: GET /v1/models", () => {
  test("the official OpenAI SDK lists and retrieves the episode's model", async () => {
    const { episode, serve } = await setup();
    const client = new OpenAI({ baseURL: `${serve()}/e/${episode.id}/v1`, apiKey: episode.ingressKey });
    const listed = [];
    for await (const model of client.models.list()) listed.push(model);
    expect(listed).toEqual([
      {
        id: "qwen3-vl-plus",
        object: "model",
        created: 0,
        owned_by: "ura-sidecar",
        context_window: plus.context_window,
        max_input_tokens: plus.max_input_tokens,
        max_output_tokens: plus.max_output_tokens,
        input_modalities: ["text", "image", "video"],
      } as never,
    ]);
    expect((await client.models.retrieve("qwen3-vl-plus")).id).toBe("qwen3-vl-plus");
    const missing = await client.models.retrieve("gpt-5").catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).message).toContain(
      "its model is qwen3-vl-plus",
    );
    const unauthorized = new OpenAI({ baseURL: `${serve()}/e/${episode.id}/v1`, apiKey: "nope" });
    expect(await unauthorized.models.list().catch((error: unknown) => error)).toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
  });
});

describe("Gemini route: models.list and models.get", () => {
  test("the episode's model with inputTokenLimit and outputTokenLimit; another name is NOT_FOUND, the episode keeps running", async () => {
    const { episode, get } = await setup();
    const key = { "x-goog-api-key": episode.ingressKey };
    const list = await get("/gemini/v1beta/models?pageSize=50", key);
    expect(list.status).toBe(200);
    const model = {
      name: "models/qwen3-vl-plus",
      baseModelId: "qwen3-vl-plus",
      version: "1",
      displayName: "qwen3-vl-plus",
      description: "qwen3-vl-plus through ura-sidecar (a Qwen Chat Completions upstream)",
      inputTokenLimit: plus.max_input_tokens,
      outputTokenLimit: plus.max_output_tokens,
      supportedGenerationMethods: ["generateContent"],
      thinking: false,
    };
    expect(await list.json()).toEqual({ models: [model] });
    expect(await (await get("/gemini/v1beta/models/qwen3-vl-plus", key)).json()).toEqual(model);
    const other = await get("/gemini/v1beta/models/gemini-2.5-flash", key);
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { status: string } }).error.status).toBe("NOT_FOUND");
    expect(episode.state).toBe("running");
    const byQuery = await get(`/gemini/v1beta/models?key=${episode.ingressKey}`, {});
    expect(byQuery.status).toBe(200);
    expect((await get("/gemini/v1beta/models", { "x-goog-api-key": "nope" })).status).toBe(401);
  });

  test("unknown routes keep their refusal: a POST to models is an unsupported operation", async () => {
    const { episode, app } = await setup();
    const res = await app.request(`/e/${episode.id}/gemini/v1beta/models`, {
      method: "POST",
      headers: { "x-goog-api-key": episode.ingressKey, "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(400);
    expect(episode.failure?.reason).toBe("provider_error");
  });
});
