/**
 * The official `openai` SDK against the compiled binary (embedded scripted
 * model): a function-call round trip whose second turn sends only the
 * function_call_output and `previous_response_id`, streamed and not; the two
 * stateful cases of a conformance run (continuation of a stored response; a
 * missing or store:false previous response → previous_response_not_found); and
 * every answer valid against the published schema. Across a restart of the
 * binary on the same data directory, the episode's stored responses are still
 * served from its records (`responses.retrieve`), store:false ones are not, and a
 * continuation is refused explicitly: a restored episode runs no model exchange.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { records } from "../support/episode-evidence.ts";
import { responseResourceErrors, streamingEventErrors } from "../support/open-responses-schema.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

let sidecar: SidecarProcess;
let episode: LaunchInfo;
let client: OpenAI;

beforeAll(async () => {
  sidecar = await startSidecarProcess();
  episode = await sidecar.createEpisode({ max_turns: 0 });
  client = new OpenAI({ apiKey: episode.ingress_key, baseURL: episode.urls.responses, maxRetries: 0 });
});
afterAll(async () => {
  await sidecar.stop();
});

const tools: OpenAI.Responses.FunctionTool[] = ["observe", "record", "finish"].map((name) => ({
  type: "function",
  name: `ura_${name}`,
  description: null,
  parameters: { type: "object", properties: {} },
  strict: false,
}));
const model = "ura-qwen";

function calls(response: OpenAI.Responses.Response): OpenAI.Responses.ResponseFunctionToolCall[] {
  return response.output.filter(
    (o): o is OpenAI.Responses.ResponseFunctionToolCall => o.type === "function_call",
  );
}

describe("openai SDK: stored responses against the binary", () => {
  test("round trip: turn 2 carries only function_call_output + previous_response_id; turn 3 streams on the chain", async () => {
    const r1 = await client.responses.create({
      model,
      input: "Observe, record the nonce twice, finish.",
      tools,
    });
    expect(responseResourceErrors(r1)).toEqual([]);
    const [observe] = calls(r1);
    expect(observe?.name).toBe("ura_observe");

    const r2 = await client.responses.create({
      model,
      previous_response_id: r1.id,
      input: [
        {
          type: "function_call_output",
          call_id: observe?.call_id ?? "",
          output: "Observation 1. nonce: abc123",
        },
      ],
      tools,
    });
    expect(responseResourceErrors(r2)).toEqual([]);
    expect(r2.previous_response_id).toBe(r1.id);
    expect(calls(r2).map((c) => [c.name, c.arguments])).toEqual([
      ["ura_record", '{"nonce":"abc123"}'],
      ["ura_record", '{"nonce":"abc123"}'],
    ]);

    const stream = await client.responses.create({
      model,
      previous_response_id: r2.id,
      input: calls(r2).map((c) => ({
        type: "function_call_output" as const,
        call_id: c.call_id,
        output: "recorded",
      })),
      tools,
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    for (const event of events) expect(streamingEventErrors(event)).toEqual([]);
    const done = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(done.type).toBe("response.completed");
    expect(done.response.previous_response_id).toBe(r2.id);
    // The scripted model names the colour of the last image; none was sent, which it says.
    expect(calls(done.response).map((c) => [c.name, c.arguments])).toEqual([
      ["ura_finish", '{"answer":"no-image-seen"}'],
    ]);

    // The ledger registered exactly the call ids the SDK saw, in order: the same identity as with full history.
    const registered = records(episode.records_dir, "ledger")
      .filter((e) => e.type === "registered")
      .flatMap((e) => (e.calls as { id: string }[]).map((c) => c.id));
    expect(registered).toEqual([...calls(r1), ...calls(r2), ...calls(done.response)].map((c) => c.call_id));
  });

  test("a missing previous response → 404 previous_response_not_found, in the SDK's error", async () => {
    const error = await client.responses
      .create({ model, previous_response_id: "resp_openresponses_missing", input: "continue" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("previous_response_not_found");
    expect((error as InstanceType<typeof OpenAI.APIError>).param).toBe("previous_response_id");
  });

  test("a store:false response cannot be continued", async () => {
    const unstored = await client.responses.create({ model, input: "Name this session.", store: false });
    expect((unstored as unknown as { store: boolean }).store).toBe(false);
    const error = await client.responses
      .create({ model, previous_response_id: unstored.id, input: "continue" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as Error).message).toContain("store: false");
  });
});

/** The response as the wire carried it: without what the SDK adds to a non-streamed answer. */
function wire(response: OpenAI.Responses.Response): Record<string, unknown> {
  const { _request_id, output_text, ...rest } = response as OpenAI.Responses.Response & {
    _request_id?: unknown;
  };
  return rest;
}

describe("openai SDK: stored responses survive a restart (served from the records)", () => {
  test("retrieve before and after the restart; store:false and unknown ids 404; continuing a restored episode is a clear 400", async () => {
    const before = await startSidecarProcess();
    const launched = await before.createEpisode();
    const sdk = (on: SidecarProcess) =>
      new OpenAI({
        apiKey: launched.ingress_key,
        baseURL: launched.urls.responses.replace(before.url, on.url),
        maxRetries: 0,
      });
    let r1: OpenAI.Responses.Response;
    let r2: OpenAI.Responses.Response;
    let unstored: OpenAI.Responses.Response;
    try {
      const live = sdk(before);
      r1 = await live.responses.create({ model, input: "Observe, record the nonce twice, finish.", tools });
      const [observe] = calls(r1);
      const stream = await live.responses.create({
        model,
        previous_response_id: r1.id,
        input: [{ type: "function_call_output", call_id: observe?.call_id ?? "", output: "nonce: abc123" }],
        tools,
        stream: true,
      });
      let completed: OpenAI.Responses.Response | undefined;
      for await (const event of stream) if (event.type === "response.completed") completed = event.response;
      if (!completed) throw new Error("no response.completed");
      r2 = completed;
      unstored = await live.responses.create({ model, input: "Name this session.", store: false });
      expect(wire(await live.responses.retrieve(r2.id))).toEqual(wire(r2));
    } finally {
      await before.stopCleanly();
    }

    const after = await startSidecarProcess({ dataDir: before.dataDir });
    try {
      const restored = sdk(after);
      const again1 = await restored.responses.retrieve(r1.id);
      const again2 = await restored.responses.retrieve(r2.id);
      expect(wire(again1)).toEqual(wire(r1));
      expect(wire(again2)).toEqual(wire(r2));
      expect(again2.previous_response_id).toBe(r1.id);
      for (const response of [again1, again2]) expect(responseResourceErrors(response)).toEqual([]);

      for (const [id, says] of [
        [unstored.id, "store: false"],
        ["resp_never_delivered", "no response"],
      ] as const) {
        const error = await restored.responses.retrieve(id).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(OpenAI.NotFoundError);
        expect((error as Error).message).toContain(says);
      }

      const continued = await restored.responses
        .create({ model, previous_response_id: r2.id, input: "go on", tools })
        .catch((e: unknown) => e);
      expect(continued).toBeInstanceOf(OpenAI.BadRequestError);
      expect((continued as Error).message).toContain("no further model exchanges are run");
    } finally {
      await after.stop();
    }
  }, 60_000);
});
