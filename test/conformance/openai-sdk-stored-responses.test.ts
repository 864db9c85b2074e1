/**
 * The official `openai` SDK against the compiled binary (embedded scripted
 * model): a function-call round trip whose second turn sends only the
 * function_call_output and `previous_response_id`, streamed and not; the two
 * stateful cases of a conformance run (continuation of a stored response; a
 * missing or store:false previous response → previous_response_not_found); and
 * every answer valid against the published schema.
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
