/**
 * The "add a pipeline stage" walkthrough of docs/architecture.md, followed once by a
 * reader new to the code and kept as a test so it stays true. The throwaway stage
 * leaves out of the hub request the tools a deployment screens by name, and refuses a
 * request whose every tool is screened, naming `tools` (step 1: one function
 * `(run, input) => output`, a SidecarError to fail). Step 3 (its place in answerExchange)
 * is the one production edit a throwaway cannot make, so the stage runs in the pipeline
 * of test/support/staged-pipeline.ts, runExchange's sequence from the same stage
 * functions, which the first test holds to the shipped route. Step 2 (its own record
 * line) needs a stage name in the closed `exchangeStageSchema`; this stage records
 * nothing of its own, and what it did shows in the lines around it.
 */
import { describe, expect, test } from "bun:test";
import type { ExchangeRun } from "../../src/exchange/exchange-run.ts";
import type { HubRequest } from "../../src/hub/schema.ts";
import { SidecarError } from "../../src/lib/errors.ts";
import { exchangeStageSchema } from "../../src/records/exchange-lines.ts";
import { records } from "../support/episode-evidence.ts";
import { createInProcessSidecar, postJson } from "../support/in-process-sidecar.ts";
import { changedPipelineGroup, type HubStage } from "../support/staged-pipeline.ts";

// Step 1, the stage: a declared input and output, a value the next stage takes.
function screenTools(screened: ReadonlySet<string>): HubStage {
  return (run: ExchangeRun, hub: HubRequest): HubRequest => {
    const kept = hub.tools.filter((tool) => !screened.has(tool.name));
    if (kept.length === hub.tools.length) return hub;
    if (kept.length === 0)
      throw new SidecarError(
        "invalid_request",
        `tools: every declared tool is screened in ${run.episode.id}`,
        {
          param: "tools",
        },
      );
    return { ...hub, tools: kept };
  };
}

const tools = (names: string[]) =>
  names.map((name) => ({ name: `mcp__ura__${name}`, description: name, input_schema: { type: "object" } }));
const turn = (toolNames: string[]) => ({
  model: "ura-qwen",
  max_tokens: 1024,
  messages: [{ role: "user", content: "Observe, record twice, finish." }],
  tools: tools(toolNames),
});
const robot = ["observe", "record", "finish"];

async function sidecarWith(stage?: HubStage) {
  const sidecar = await createInProcessSidecar({
    episodeRoutes: [changedPipelineGroup("staged", stage ? { beforeContext: stage } : {})],
  });
  const post = (episode: { id: string; ingressKey: string }, path: string, body: unknown) =>
    postJson(sidecar.app, `/e/${episode.id}${path}`, body, { "x-api-key": episode.ingressKey });
  return { ...sidecar, post };
}

const stagesOf = (dir: string) => records(dir, "exchanges").map((line) => line.stage);

describe("a throwaway pipeline stage built by the walkthrough", () => {
  test("the test pipeline without a change runs as the shipped route: same lines, same upstream body", async () => {
    const sidecar = await sidecarWith();
    try {
      const shipped = sidecar.createEpisode({ max_turns: 0 });
      const staged = sidecar.createEpisode({ max_turns: 0 });
      const a = await sidecar.post(shipped, "/anthropic/v1/messages", turn(robot));
      const b = await sidecar.post(staged, "/staged/v1/messages", turn(robot));
      expect([a.status, b.status]).toEqual([200, 200]);
      // The scripted upstream numbers its calls across episodes: compare what they call.
      const calls = async (res: Response) =>
        ((await res.json()) as { content: { type: string; name?: string }[] }).content.map((b) => [
          b.type,
          b.name,
        ]);
      expect(await calls(b)).toEqual(await calls(a));
      expect(stagesOf(staged.records.dir)).toEqual(stagesOf(shipped.records.dir));
      expect(sidecar.scripted.received).toHaveLength(2);
      expect(sidecar.scripted.received[1]?.body).toEqual(sidecar.scripted.received[0]?.body);
    } finally {
      sidecar.stop();
    }
  });

  test("the stage's output is what goes upstream; the client's request is recorded as sent", async () => {
    const sidecar = await sidecarWith(screenTools(new Set(["mcp__ura__record"])));
    try {
      const episode = sidecar.createEpisode({ max_turns: 0 });
      const res = await sidecar.post(episode, "/staged/v1/messages", turn(robot));
      expect(res.status).toBe(200);
      await res.json(); // `delivered` and `status` are written as the answer is read
      const sent = sidecar.scripted.received[0]?.body as { tools: { function: { name: string } }[] };
      expect(sent.tools.map((tool) => tool.function.name)).toEqual(["mcp__ura__observe", "mcp__ura__finish"]);
      const lines = records(episode.records.dir, "exchanges");
      expect(lines.map((line) => line.stage)).toEqual([...exchangeStageSchema.options]);
      const client = lines[0]?.body as { tools: { name: string }[] };
      expect(client.tools.map((tool) => tool.name)).toEqual(tools(robot).map((tool) => tool.name));
    } finally {
      sidecar.stop();
    }
  });

  test("a stage that throws fails the exchange in one place: the client's envelope naming the field, a failed status, the turn given back", async () => {
    const sidecar = await sidecarWith(screenTools(new Set(tools(["record"]).map((tool) => tool.name))));
    try {
      const episode = sidecar.createEpisode({ max_turns: 1 });
      const refused = await sidecar.post(episode, "/staged/v1/messages", turn(["record"]));
      expect(refused.status).toBe(400);
      const envelope = (await refused.json()) as { type: string; error: { type: string; message: string } };
      expect(envelope).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
      expect(envelope.error.message).toStartWith("tools: every declared tool is screened");
      const lines = records(episode.records.dir, "exchanges");
      expect(lines.map((line) => line.stage)).toEqual(["client_request", "status"]);
      expect(lines[1]).toMatchObject({
        status: "failed",
        error: { kind: "invalid_request", param: "tools" },
      });
      expect(sidecar.scripted.received).toHaveLength(0);
      // The episode's one turn was given back: the next request is answered.
      const next = await sidecar.post(episode, "/staged/v1/messages", turn(robot));
      expect(next.status).toBe(200);
      await next.json();
      expect(episode.counters.delivered_exchanges).toBe(1);
    } finally {
      sidecar.stop();
    }
  });
});
