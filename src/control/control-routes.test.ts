import { describe, expect, test } from "bun:test";
import { declaredModel } from "../../test/support/declared-model.ts";
import {
  connectMcp,
  deliverBatch,
  plainManifest,
  testControlPassword,
  testSidecarsPerTest,
} from "../../test/support/mcp-kit.ts";
import { cancelledEpisodeSchema, episodeListSchema } from "../episodes/episode-status.ts";
import { createInertExecutor } from "../executor/inert-executor.ts";
import { launchInfoSchema } from "../kits/launch-info.ts";

const startSidecar = testSidecarsPerTest();

async function setup(options: Parameters<typeof startSidecar>[0] = {}) {
  const sidecar = await startSidecar(options);
  const control = (path: string, init: RequestInit & { password?: string | null } = {}) => {
    const { password = testControlPassword, ...rest } = init;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (password !== null) headers.authorization = `Bearer ${password}`;
    return sidecar.app.request(`/control${path}`, { ...rest, headers });
  };
  const create = async (body: unknown = {}) => {
    const res = await control("/episodes", { method: "POST", body: JSON.stringify(body) });
    expect(res.status).toBe(201);
    return (await res.json()) as Record<string, unknown> & {
      id: string;
      mcp_token: string;
      urls: { responses: string; gemini: string; anthropic: string; mcp: string };
    };
  };
  return { ...sidecar, control, create };
}

describe("control API", () => {
  test("every route needs the control password", async () => {
    const { control, create } = await setup();
    const { id } = await create();
    for (const [path, method] of [
      ["/episodes", "GET"],
      ["/episodes", "POST"],
      [`/episodes/${id}`, "GET"],
      [`/episodes/${id}/cancel`, "POST"],
      ["/shutdown", "POST"],
    ] as const) {
      expect((await control(path, { method, password: null })).status).toBe(401);
      expect((await control(path, { method, password: "wrong" })).status).toBe(401);
      expect((await control(path, { method, password: `${testControlPassword}x` })).status).toBe(401);
    }
    const refused = await control("/episodes", { password: null });
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe("authentication");
  });

  test("create returns what a launcher needs; list and get show the episode running", async () => {
    const { control, create, url } = await setup();
    const created = await create({ max_turns: 5, client: "codex", model: "qwen3-vl-flash" });
    expect(created.id).toMatch(/^ep_[a-z0-9]+$/);
    expect(created.urls).toEqual({
      responses: `${url}/e/${created.id}/v1`,
      gemini: `${url}/e/${created.id}/gemini`,
      anthropic: `${url}/e/${created.id}/anthropic`,
      mcp: `${url}/e/${created.id}/mcp`,
    });
    expect(created.ingress_key).toMatch(/^ura_key_/);
    expect(created.mcp_token).toMatch(/^ura_mcp_/);
    expect(created).toMatchObject({
      state: "running",
      max_turns: 5,
      client: "codex",
      model: "qwen3-vl-flash",
    });
    await create();
    const list = episodeListSchema.parse(await (await control("/episodes")).json());
    expect(list.episodes).toHaveLength(2);
    expect(list.episodes.map((e) => e.state)).toEqual(["running", "running"]);
    const got = (await (await control(`/episodes/${created.id}`)).json()) as Record<string, unknown>;
    expect(got).toMatchObject({
      id: created.id,
      state: "running",
      failure: null,
      result: null,
      counters: { delivered_exchanges: 0 },
    });
    expect(got).not.toHaveProperty("mcp_token");
    expect(got).not.toHaveProperty("ingress_key");
  });

  test("the launch info says how long a client must wait for one tool call, from the executor's config", async () => {
    const { create, control } = await setup({
      config: { executor: { kind: "http", url: "http://127.0.0.1:9", receipt_timeout_ms: 1_200_000 } },
    });
    const created = await create();
    const info = launchInfoSchema.parse(await (await control(`/episodes/${created.id}/launch`)).json());
    expect(info.tool_call_timeout_ms).toBe(created.tool_call_timeout_ms as number);
    // 15 s delivery + 60 s batch order + 3 × 10 s submissions and 750 ms back-off + 1200 s receipt
    // + one 10 s poll past it + 30 s for the answer.
    expect(info.tool_call_timeout_ms).toBe(1_345_750);
  });

  test("bad creation bodies are 400 and name the problem", async () => {
    const { control } = await setup();
    for (const body of [
      '{"max_turns":-1}',
      '{"surprise":true}',
      '{"client":"emacs"}',
      "{not json",
      '{"manifest":{"finish_tool":"x","tools":[]}}',
    ]) {
      const res = await control("/episodes", { method: "POST", body });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe("invalid_request");
    }
  });

  test("an episode's model is a built-in or declared one: any other is a 400 naming `model`, the launch info tells its capabilities", async () => {
    const declared = declaredModel();
    const { control, create } = await setup({
      config: { upstream: { models: { "qwen-custom-32k": declared } } },
    });
    for (const model of ["qwen-custom", "qwq-plus"]) {
      const res = await control("/episodes", { method: "POST", body: JSON.stringify({ model }) });
      expect(res.status).toBe(400);
      const { error } = (await res.json()) as { error: { type: string; message: string } };
      expect(error.message).toStartWith("model: ");
      expect(error.message).toContain(model);
    }
    expect((await (await control("/episodes")).json()) as unknown).toMatchObject({ episodes: [] });
    const created = await create({ model: "qwen-custom-32k" });
    const info = launchInfoSchema.parse(await (await control(`/episodes/${created.id}/launch`)).json());
    expect(info.model_capabilities).toEqual(declared);
  });

  test("episode ids that are unknown or carry path characters are 404", async () => {
    const { control, create } = await setup();
    const { id } = await create();
    for (const bad of [
      "ep_unknown",
      `${id}%2F..`,
      "..%2F..%2Fetc%2Fpasswd",
      "ep_ABC",
      "%2e%2e",
      `${id.toUpperCase()}`,
      `${id}%00`,
    ]) {
      expect((await control(`/episodes/${bad}`)).status).toBe(404);
      expect((await control(`/episodes/${bad}/cancel`, { method: "POST" })).status).toBe(404);
    }
  });

  test("cancel: the episode fails as cancelled, admission closes, and the report lists what did not finish", async () => {
    let release: () => void = () => {};
    const { control, create, episodes } = await setup({
      config: { shutdown: { drain_deadline_ms: 300 } },
      createExecutor: () => ({
        submit: async (job) => ({ jobId: `job_${job.callId}` }),
        receipt: () =>
          new Promise((resolve) => {
            release = () => resolve({ ok: true, content: [] });
          }),
      }),
    });
    const manifest = plainManifest([{ name: "move", mode: "background" }, { name: "finish" }]);
    const created = await create({ manifest });
    const episode = episodes.get(created.id);
    const { client } = await connectMcp(created.urls.mcp, created.mcp_token);
    deliverBatch(episode, [
      { id: "bg1", tool: "move", args: {} },
      { id: "bg2", tool: "move", args: { far: true } },
    ]);
    const accepted = await client.callTool({ name: "move", arguments: {} });
    expect(accepted.isError).toBeFalsy();

    const res = await control(`/episodes/${created.id}/cancel`, { method: "POST" });
    expect(res.status).toBe(200);
    const body = cancelledEpisodeSchema.parse(await res.json());
    expect(body.state).toBe("failed");
    expect(body.failure?.reason).toBe("cancelled");
    expect(body.drain.unfinished).toEqual(["bg1"]);
    expect(episode.closedReason()).toContain("failed");

    const late = await client.callTool({ name: "move", arguments: { far: true } });
    expect(late.isError).toBe(true);
    release();
    await Bun.sleep(10);
    expect(episode.ledger.summary()).toBeDefined();
    const again = (await (await control(`/episodes/${created.id}`)).json()) as { state: string };
    expect(again.state).toBe("failed");
    await client.close();
  });

  test("states: finished on a submitted finish receipt, and cancelling then keeps it finished", async () => {
    const { control, create, episodes } = await setup({
      createExecutor: () => createInertExecutor({ random: () => 0 }),
    });
    const created = await create();
    const episode = episodes.get(created.id);
    const { client } = await connectMcp(created.urls.mcp, created.mcp_token);
    deliverBatch(episode, [{ id: "f", tool: "finish", args: { answer: "red" } }]);
    await client.callTool({ name: "finish", arguments: { answer: "red" } });
    const got = (await (await control(`/episodes/${created.id}`)).json()) as {
      state: string;
      result: unknown;
    };
    expect(got).toMatchObject({
      state: "finished",
      result: { submitted: true, correct: false, answer: "red" },
    });
    const cancelled = cancelledEpisodeSchema.parse(
      await (await control(`/episodes/${created.id}/cancel`, { method: "POST" })).json(),
    );
    expect(cancelled.state).toBe("finished");
    expect(episode.closedReason()).toContain("cancelled");
    await client.close();
  });

  test("max_turns: exchanges are refused once the cap of delivered exchanges is reached; 0 is no cap", async () => {
    const { create, episodes } = await setup();
    const capped = episodes.get((await create({ max_turns: 2 })).id);
    expect(capped.closedReason()).toBeUndefined();
    capped.exchangeDelivered(undefined);
    expect(capped.closedReason()).toBeUndefined();
    capped.exchangeDelivered(undefined);
    expect(capped.closedReason()).toContain("max_turns (2)");
    const uncapped = episodes.get((await create({ max_turns: 0 })).id);
    for (let turn = 0; turn < 10_000; turn++) uncapped.exchangeDelivered(undefined);
    expect(uncapped.closedReason()).toBeUndefined();
  });
});
