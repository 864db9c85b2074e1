/**
 * The Gemini GenerateContent ingress in process (the whole app of
 * test/support/in-process-sidecar.ts, real pipeline, scripted upstream), one
 * sidecar for the file and a fresh episode per test.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Episode } from "../../src/episodes/episode.ts";
import { records } from "../support/episode-evidence.ts";
import { createInProcessSidecar, type InProcessSidecar, postJson } from "../support/in-process-sidecar.ts";

const redPng =
  "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAYAAACp8Z5+AAAAEklEQVR4nGO4IyLyHxkzkC4AAEOYIDFDFAUYAAAAAElFTkSuQmCC";
const fixturesDir = resolve(import.meta.dir, "../../fixtures/gemini");

let s: InProcessSidecar;
beforeAll(async () => {
  s = await createInProcessSidecar();
});
afterAll(() => s.stop());
/** The sidecar's log lines, parsed. */
const logLines = () => s.logLines.map((l) => JSON.parse(l) as Record<string, unknown>);

const waitProperty = {
  type: "boolean",
  description:
    "Set to true to wait for all previously requested tools in this turn to complete before starting.",
};
const declaration = (name: string, properties: Record<string, unknown>) => ({
  name: `mcp_ura_${name}`,
  description: name,
  parametersJsonSchema: { type: "object", properties: { ...properties, wait_for_previous: waitProperty } },
});
const tools = [
  {
    functionDeclarations: [
      declaration("observe", {}),
      declaration("record", { nonce: { type: "string" } }),
      declaration("finish", { answer: { type: "string" } }),
    ],
  },
];
const prompt = {
  role: "user",
  parts: [{ text: "Observe, record the nonce twice, finish with the colour." }],
};

function post(episode: Episode, path: string, body: unknown, key = episode.ingressKey) {
  return postJson(s.app, `/e/${episode.id}/gemini${path}`, body, { "x-goog-api-key": key });
}

const lines = (episode: Episode, file: "ledger" | "exchanges" | "auxiliary") =>
  records(episode.records.dir, file);

async function sseChunks(res: Response) {
  const text = await res.text();
  expect(text).not.toContain("event:");
  return text
    .split("\n\n")
    .filter((f) => f !== "")
    .map((f) => {
      expect(f.startsWith("data: ")).toBe(true);
      return JSON.parse(f.slice("data: ".length));
    });
}

describe("streamGenerateContent", () => {
  test("observe, then the image and nonce reach upstream as WebP and two records come back with distinct ids", async () => {
    const episode = s.episodes.create({ max_turns: 0, model: "qwen3-vl-plus" });
    const before = s.scripted.received.length;
    const first = await post(episode, "/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse", {
      contents: [prompt],
      tools,
    });
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toBe("text/event-stream");
    const chunks1 = await sseChunks(first);
    const call = chunks1.at(-1).candidates[0].content.parts[0].functionCall;
    expect(call).toMatchObject({ name: "mcp_ura_observe", args: {} });
    expect(chunks1.at(-1).candidates[0].finishReason).toBe("STOP");
    expect(chunks1.at(-1).usageMetadata.promptTokenCount).toBeGreaterThan(0);
    // wait_for_previous is not offered to Qwen.
    expect(JSON.stringify(s.scripted.received[before]?.body)).not.toContain("wait_for_previous");

    const history = [
      prompt,
      {
        role: "model",
        parts: [
          {
            functionCall: { id: call.id, name: call.name, args: {} },
            thoughtSignature: "skip_thought_signature_validator",
          },
        ],
      },
      {
        role: "user",
        parts: [
          {
            functionResponse: {
              id: call.id,
              name: call.name,
              response: { output: "observation nonce=n0nce42" },
            },
          },
          { inlineData: { mimeType: "image/png", data: redPng } },
        ],
      },
    ];
    const second = await post(episode, "/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse", {
      contents: history,
      tools,
    });
    expect(second.status).toBe(200);
    const chunks2 = await sseChunks(second);
    const calls = chunks2.map((c) => c.candidates[0].content.parts[0].functionCall);
    expect(calls.map((c) => [c.name, c.args])).toEqual([
      ["mcp_ura_record", { nonce: "n0nce42" }],
      ["mcp_ura_record", { nonce: "n0nce42" }],
    ]);
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);
    const upstreamBody = JSON.stringify(s.scripted.received.at(-1)?.body);
    expect(upstreamBody).toContain("data:image/webp;base64,");
    expect(upstreamBody).not.toContain("data:image/png");
    expect(upstreamBody).not.toContain("thoughtSignature");
    // The ledger registered exactly the delivered ids, and they became claimable.
    const registered = lines(episode, "ledger").filter((e) => e.type === "registered");
    expect(registered.at(-1)?.calls).toMatchObject(calls.map((c) => ({ id: c.id, tool: "record" })));
    expect(episode.counters.delivered_exchanges).toBe(2);
    expect(episode.state).toBe("running");
  });

  test("generateContent answers one JSON GenerateContentResponse", async () => {
    const episode = s.episodes.create({ max_turns: 0, model: "qwen3-vl-plus" });
    const res = await post(episode, "/v1beta/models/qwen3-vl-plus:generateContent", { contents: [prompt] });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      candidates: { content: { parts: { text: string }[] }; finishReason: string }[];
      modelVersion: string;
    };
    expect(body.candidates[0]?.content.parts[0]?.text).toBe("Robot smoke episode");
    expect(body.candidates[0]?.finishReason).toBe("STOP");
  });

  test("streamGenerateContent without alt=sse answers the chunks as one JSON array, as Google does", async () => {
    const episode = s.episodes.create({ max_turns: 0, model: "qwen3-vl-plus" });
    const res = await post(episode, "/v1beta/models/qwen3-vl-plus:streamGenerateContent", {
      contents: [prompt],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const chunks = (await res.json()) as { candidates: { finishReason?: string }[] }[];
    expect(chunks).toHaveLength(1);
    expect(chunks[0]?.candidates[0]?.finishReason).toBe("STOP");
  });

  test("the recorded first turn of Gemini CLI runs through the whole pipeline", async () => {
    const episode = s.episodes.create({ max_turns: 0, model: "qwen3-vl-plus" });
    const body = JSON.parse(readFileSync(join(fixturesDir, "first-turn/client-request.json"), "utf8"));
    const res = await post(episode, "/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse", body);
    expect(res.status).toBe(200);
    await res.text();
    const stages = lines(episode, "exchanges").map((l) => l.stage);
    expect(stages).toEqual([
      "client_request",
      "after_context",
      "upstream_request",
      "upstream_response",
      "delivered",
      "status",
    ]);
    const upstream = lines(episode, "exchanges").find((l) => l.stage === "upstream_request");
    expect(upstream?.ignored).toContain(
      "generationConfig.thinkingConfig (upstream runs with thinking disabled)",
    );
  });

  test("an unknown field is a 400 naming it; the episode keeps running", async () => {
    const episode = s.episodes.create({ max_turns: 0, model: "qwen3-vl-plus" });
    const before = s.scripted.received.length;
    const res = await post(episode, "/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse", {
      contents: [prompt],
      generationConfig: { seed: 7 },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: number; message: string; status: string } };
    expect(body.error).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
    expect(body.error.message).toStartWith("generationConfig.seed:");
    expect(episode.state).toBe("running");
    expect(episode.counters.failed_exchanges).toBe(1);
    expect(s.scripted.received.length).toBe(before);
  });
});

describe("countTokens", () => {
  test("a local 400 in the Gemini envelope: auxiliary, no exchange, no turn, logged with path and status", async () => {
    const episode = s.episodes.create({ max_turns: 1, model: "qwen3-vl-plus" });
    const before = s.scripted.received.length;
    const body = JSON.parse(readFileSync(join(fixturesDir, "count-tokens/client-request.json"), "utf8"));
    const res = await post(episode, "/v1beta/models/qwen3-vl-plus:countTokens", body);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        code: 400,
        message:
          "countTokens is not supported for qwen3-vl-plus: the sidecar does not count tokens; use a local estimate",
        status: "INVALID_ARGUMENT",
      },
    });
    expect(s.scripted.received.length).toBe(before);
    expect(lines(episode, "exchanges")).toEqual([]);
    const aux = lines(episode, "auxiliary");
    expect(aux).toHaveLength(1);
    expect(aux[0]).toMatchObject({
      operation: "countTokens",
      path: `/e/${episode.id}/gemini/v1beta/models/qwen3-vl-plus:countTokens`,
      status: 400,
    });
    expect(episode.counters).toMatchObject({
      auxiliary_responses: 1,
      delivered_exchanges: 0,
      failed_exchanges: 0,
    });
    expect(
      logLines().some(
        (l) =>
          l.msg === "auxiliary response" &&
          l.episode === episode.id &&
          l.status === 400 &&
          l.path === aux[0]?.path,
      ),
    ).toBe(true);
    // Not a turn: the one allowed turn (max_turns 1) is still available.
    const turn = await post(episode, "/v1beta/models/qwen3-vl-plus:generateContent", { contents: [prompt] });
    expect(turn.status).toBe(200);
    expect(episode.state).toBe("running");
  });
});

describe("unsupported operations end the episode before any upstream request", () => {
  test.each([
    [
      "another model (Gemini CLI's classifier)",
      "/v1beta/models/gemini-3.5-flash-lite:generateContent",
      "is not this episode's model",
    ],
    [
      "countTokens for another model",
      "/v1beta/models/gemini-2.5-pro:countTokens",
      "is not this episode's model",
    ],
    ["a file upload", "/upload/v1beta/files?uploadType=multipart", "is not supported"],
    ["cachedContents", "/v1beta/cachedContents", "is not supported"],
    ["embedContent", "/v1beta/models/qwen3-vl-plus:embedContent", "is not supported"],
  ])("%s", async (_what, path, reason) => {
    const episode = s.episodes.create({ max_turns: 0, model: "qwen3-vl-plus" });
    const before = s.scripted.received.length;
    const res = await post(episode, path, { contents: [prompt] });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string; status: string } };
    expect(body.error.message).toContain(reason);
    expect(body.error.message).toEndWith(
      ". The episode is now in provider_error; no upstream request was made.",
    );
    expect(episode.state).toBe("failed");
    expect(episode.failure?.reason).toBe("provider_error");
    // The episode keeps the plain reason: its status reads "provider_error: <reason>".
    expect(episode.failure?.message).toContain(reason);
    expect(episode.failure?.message).not.toContain("provider_error");
    expect(episode.failure?.message).not.toContain("upstream request");
    expect(s.scripted.received.length).toBe(before);
    const records = lines(episode, "exchanges");
    expect(records.map((r) => r.stage)).toEqual(["client_request", "status"]);
    expect(records[1]).toMatchObject({ status: "failed", episode_state: "failed" });
    // A retry of a good request is refused too (400, final), still without upstream work.
    const retry = await post(episode, "/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse", {
      contents: [prompt],
    });
    expect(retry.status).toBe(400);
    expect(((await retry.json()) as { error: { status: string } }).error.status).toBe("FAILED_PRECONDITION");
    expect(s.scripted.received.length).toBe(before);
  });
});

describe("upstream failures end the episode: the first answer is already final", () => {
  test.each([
    ["transient (the sidecar's retries spent)", { kind: "status" as const, status: 503 }, "HTTP 503"],
    ["invalid output (an undeclared tool)", { kind: "undeclared_tool" as const }, "did not declare"],
  ])(
    "%s → 400 FAILED_PRECONDITION naming the fault and provider_error; Gemini CLI does not retry it",
    async (_what, fault, says) => {
      const episode = s.episodes.create({ max_turns: 0, model: "qwen3-vl-plus" });
      s.scripted.enqueueFaults([fault]); // the in-process sidecar makes one upstream attempt
      const path = "/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse";
      const res = await post(episode, path, { contents: [prompt], tools });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: number; message: string; status: string } };
      expect(body.error).toMatchObject({ code: 400, status: "FAILED_PRECONDITION" });
      expect(body.error.message).toContain(says);
      expect(body.error.message).toContain("provider_error");
      expect(episode.failure?.reason).toBe("provider_error");
      const before = s.scripted.received.length;
      const retry = await post(episode, path, { contents: [prompt], tools });
      expect(retry.status).toBe(400);
      expect(s.scripted.received.length).toBe(before);
    },
  );
});

describe("authentication", () => {
  test("a wrong key is a 401 in the Gemini envelope and touches nothing", async () => {
    const episode = s.episodes.create({ max_turns: 0, model: "qwen3-vl-plus" });
    const res = await post(episode, "/v1beta/models/other:generateContent", { contents: [prompt] }, "wrong");
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { status: string } }).error.status).toBe("UNAUTHENTICATED");
    expect(episode.state).toBe("running");
  });

  test("an unknown episode is a 404", async () => {
    const res = await s.app.request("/e/ep_nope/gemini/v1beta/models/x:generateContent", {
      method: "POST",
      body: "{}",
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { status: string } }).error.status).toBe("NOT_FOUND");
  });
});
