/**
 * An error raised after translation (an image the converter rejects, an image for
 * a text-only model, an image over the data URL limit, a broken tool history found
 * at the context stage) names the field in the client's own request —
 * `input[2].output[1].image_url`, `contents[2].parts[1].inlineData`,
 * `messages[2].content[0].content[1].source`, `input[3]` — not the hub location
 * (`messages[i].content[j]`, `messages[i].toolCalls[j]`) the user never saw.
 * Against the compiled binary, in each protocol's envelope, and recorded with the
 * failed exchange.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rgbNoisePng, solidColourPng } from "../../src/images/generate-png.ts";
import { records } from "../support/episode-evidence.ts";
import { ingressKits, type ProtocolName } from "../support/ingress-kit.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

const notPng = "data:image/png;base64,AAAAAAAA";
const bare = notPng.slice("data:image/png;base64,".length);

/** The observe tool, the model's call of it and its answer, as each protocol writes them. */
const observeTool = {
  responses: [{ type: "function", name: "ura_observe", parameters: { type: "object" } }],
  gemini: [{ functionDeclarations: [{ name: "mcp_ura_observe", parametersJsonSchema: { type: "object" } }] }],
  messages: [{ name: "mcp__ura__observe", input_schema: { type: "object" } }],
};
const geminiCall = {
  role: "model",
  parts: [{ functionCall: { id: "c1", name: "mcp_ura_observe", args: {} } }],
};
const geminiAnswer = (output: string) => ({
  functionResponse: { id: "c1", name: "mcp_ura_observe", response: { output } },
});
const claudeCall = { type: "tool_use", id: "c1", name: "mcp__ura__observe", input: {} };

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
      tools: observeTool.responses,
    },
  },
  gemini: {
    field: "contents[2].parts[1].inlineData",
    body: {
      contents: [
        { role: "user", parts: [{ text: "go" }] },
        geminiCall,
        {
          role: "user",
          parts: [geminiAnswer("frame"), { inlineData: { mimeType: "image/png", data: bare } }],
        },
      ],
      tools: observeTool.gemini,
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
          content: [claudeCall],
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
      tools: observeTool.messages,
    },
  },
};

let sidecar: SidecarProcess;
let textOnly: SidecarProcess;
let smallImages: SidecarProcess;
beforeAll(async () => {
  [sidecar, textOnly, smallImages] = await Promise.all([
    startSidecarProcess(),
    startSidecarProcess({ config: { upstream: { models: { "qwen3-vl-plus": { image_input: false } } } } }),
    // A 4×4 PNG converts to a WebP of a few dozen bytes: its data URL is over 40.
    startSidecarProcess({ config: { images: { limits: { max_data_url_bytes: 40 } } } }),
  ]);
}, 30_000);
afterAll(async () => {
  await Promise.all([sidecar?.stop(), textOnly?.stop(), smallImages?.stop()]);
});

async function post(on: SidecarProcess, episode: LaunchInfo, protocol: ProtocolName, body: unknown) {
  const kit = ingressKits[protocol];
  const res = await fetch(`${on.url}${kit.path(episode.id, "qwen3-vl-plus", false)}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...kit.headers(episode.ingress_key) },
    body: JSON.stringify(body),
  });
  const answer = await res.json();
  return { status: res.status, envelope: kit.readError(res.status, answer), body: answer };
}

const png = `data:image/png;base64,${Buffer.from(solidColourPng(4, 4, [10, 20, 30])).toString("base64")}`;

/** The bad-image turn with a real PNG in place of the bad one. */
function withPng(protocol: ProtocolName): Record<string, unknown> {
  const text = JSON.stringify(turns[protocol].body);
  return JSON.parse(
    protocol === "responses" ? text.replace(notPng, png) : text.replaceAll(bare, png.split(",")[1] ?? ""),
  );
}

/**
 * Histories whose tool pairing only the context stage checks: a call answered
 * twice, and a call never answered. Each names the client's item.
 */
const brokenHistories: Record<
  ProtocolName,
  { name: string; body: Record<string, unknown>; field: string }[]
> = {
  responses: [
    {
      name: "a second function_call_output for one call",
      field: "input[3]",
      body: {
        model: "ura-qwen",
        input: [
          { role: "user", content: "go" },
          { type: "function_call", call_id: "c1", name: "ura_observe", arguments: "{}" },
          { type: "function_call_output", call_id: "c1", output: "frame" },
          { type: "function_call_output", call_id: "c1", output: "frame again" },
        ],
        tools: observeTool.responses,
      },
    },
    {
      name: "a function_call without its output",
      field: "input[1]",
      body: {
        model: "ura-qwen",
        input: [
          { role: "user", content: "go" },
          { type: "function_call", call_id: "c1", name: "ura_observe", arguments: "{}" },
          { role: "user", content: "and now?" },
        ],
        tools: observeTool.responses,
      },
    },
  ],
  gemini: [
    {
      name: "a functionResponse answering a call of an earlier turn again",
      field: "contents[4].parts[0].functionResponse",
      body: {
        contents: [
          { role: "user", parts: [{ text: "go" }] },
          geminiCall,
          {
            role: "user",
            parts: [geminiAnswer("frame")],
          },
          { role: "model", parts: [{ text: "looking again" }] },
          {
            role: "user",
            parts: [geminiAnswer("again")],
          },
        ],
        tools: observeTool.gemini,
      },
    },
    {
      name: "a functionCall without its functionResponse",
      field: "contents[1].parts[1].functionCall",
      body: {
        contents: [
          { role: "user", parts: [{ text: "go" }] },
          {
            role: "model",
            parts: [{ text: "observing" }, { functionCall: { id: "c1", name: "mcp_ura_observe", args: {} } }],
          },
          { role: "user", parts: [{ text: "and now?" }] },
        ],
        tools: observeTool.gemini,
      },
    },
  ],
  messages: [
    {
      name: "a second tool_result for one tool_use",
      field: "messages[4].content[0]",
      body: {
        model: "claude-sonnet-4-5",
        max_tokens: 256,
        messages: [
          { role: "user", content: "go" },
          {
            role: "assistant",
            content: [claudeCall],
          },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "c1", content: "frame" }] },
          { role: "assistant", content: [{ type: "text", text: "again" }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "c1", content: "again" }] },
        ],
        tools: observeTool.messages,
      },
    },
    {
      name: "a tool_use without its tool_result",
      field: "messages[1].content[1]",
      body: {
        model: "claude-sonnet-4-5",
        max_tokens: 256,
        messages: [
          { role: "user", content: "go" },
          {
            role: "assistant",
            content: [{ type: "text", text: "observing" }, claudeCall],
          },
          { role: "user", content: "and now?" },
        ],
        tools: observeTool.messages,
      },
    },
  ],
};

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
    const { status, envelope } = await post(textOnly, episode, "responses", withPng("responses"));
    expect(status).toBe(400);
    expect(envelope.message).toStartWith("input[2].output[1].image_url: model");
    expect(envelope.message).toContain("does not take image input");
  });
});

describe("context-stage errors name the client's own field", () => {
  for (const protocol of ["responses", "gemini", "messages"] as const) {
    for (const { name, body, field } of brokenHistories[protocol]) {
      test(`${protocol}: ${name} → 400 naming ${field}, recorded with the failed exchange`, async () => {
        const episode = await sidecar.createEpisode();
        const { status, envelope } = await post(sidecar, episode, protocol, body);
        expect(status).toBe(400);
        expect(envelope.message).toStartWith(`${field}: invalid tool history: `);
        expect(envelope.message).not.toMatch(/messages\[\d+\]\.toolCalls|hub/);
        const failed = records(episode.records_dir, "exchanges").find((l) => l.stage === "status");
        expect(failed).toMatchObject({ status: "failed", error: { kind: "invalid_request", param: field } });
      });
    }

    test(`${protocol}: an image over max_data_url_bytes names the client's image field`, async () => {
      const episode = await smallImages.createEpisode({ model: "qwen3-vl-plus" });
      const { status, envelope } = await post(smallImages, episode, protocol, withPng(protocol));
      expect(status).toBe(400);
      expect(envelope.message).toStartWith(`${turns[protocol].field}: the image's data URL upstream is `);
      expect(envelope.message).toContain("max_data_url_bytes = 40 bytes");
    });
  }

  test.each(["responses", "gemini", "messages"] as const)(
    "%s: protected content over body_budget names the largest protected item's field, recorded with the failed exchange",
    async (protocol) => {
      // The newest tool result's frame (a few KB of WebP) is protected and alone over the budget.
      const episode = await sidecar.createEpisode({
        model: "qwen3-vl-plus",
        context: { policy: "body_budget", max_body_bytes: 1500 },
      });
      const noisy = rgbNoisePng(32, 32, 5).png.toBase64();
      const text = JSON.stringify(turns[protocol].body);
      const body = JSON.parse(
        protocol === "responses"
          ? text.replace(notPng, `data:image/png;base64,${noisy}`)
          : text.replaceAll(bare, noisy),
      );
      const { status, envelope, body: answer } = await post(sidecar, episode, protocol, body);
      expect(status).toBe(400);
      const { field } = turns[protocol];
      // Digit runs are broken with a zero-width space for OpenCode's sake (errors.ts).
      const message = envelope.message.replaceAll("\u200b", "");
      expect(message).toContain("over max_body_bytes 1500");
      expect(message).toContain(`the largest protected item is ${field} (`);
      if (protocol === "responses") expect((answer as { error: { param: string } }).error.param).toBe(field);
      const failed = records(episode.records_dir, "exchanges").find((l) => l.stage === "status");
      expect(failed).toMatchObject({ status: "failed", error: { kind: "request_too_large", param: field } });
    },
  );

  test("responses: with previous_response_id, the new input is input[k] and the stored items are named as such", async () => {
    const episode = await sidecar.createEpisode();
    const kit = ingressKits.responses;
    const first = await fetch(`${sidecar.url}${kit.path(episode.id, "ura-qwen", false)}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...kit.headers(episode.ingress_key) },
      body: JSON.stringify({ ...kit.firstTurn(false), store: true }),
    });
    const r1 = (await first.json()) as { id: string; output: { type: string; call_id?: string }[] };
    expect(first.status).toBe(200);
    const call = r1.output.find((o) => o.type === "function_call")?.call_id ?? "";
    const output = { type: "function_call_output", call_id: call, output: "done" };
    const { status, body } = await post(sidecar, episode, "responses", {
      model: "ura-qwen",
      previous_response_id: r1.id,
      input: [output, output],
      tools: (kit.firstTurn(false) as { tools: unknown }).tools,
    });
    expect(status).toBe(400);
    const error = (body as { error: { message: string; param: string } }).error;
    expect(error.param).toBe("input[1]");
    // A random id can hold a digit run OpenCode reads as a transient status ("…524…"): the
    // envelope breaks it with a zero-width space (errors.ts), which reads the same.
    const message = error.message.replaceAll("\u200b", "");
    expect(message).toContain(`(at previous_response_id ${JSON.stringify(r1.id)} item 1)`);
    expect(message).toContain("(first at input[0])");
  });
});
