/**
 * Stored responses through the whole Responses route (in process, scripted
 * upstream): previous_response_id chains a delivered response's input and output
 * before the new input; item_reference names an item of a delivered response;
 * store:false, unknown, other-episode, revoked and undelivered ids are refused in
 * the Responses envelope, naming the field.
 */
import { describe, expect, test } from "bun:test";
import { createResponseStore, resolveStoredInput } from "../../src/ingress/responses/stored-responses.ts";
import { records } from "../support/episode-evidence.ts";
import { createInProcessSidecar, postJson } from "../support/in-process-sidecar.ts";

const tools = ["observe", "record", "finish"].map((name) => ({
  type: "function",
  name: `ura_${name}`,
  parameters: { type: "object", properties: {} },
}));

async function setup() {
  const sidecar = await createInProcessSidecar();
  const episode = sidecar.createEpisode();
  const post = (body: Record<string, unknown>, on = episode) =>
    postJson(
      sidecar.app,
      `/e/${on.id}/v1/responses`,
      { model: "ura-qwen", tools, ...body },
      {
        authorization: `Bearer ${on.ingressKey}`,
      },
    );
  return { ...sidecar, episode, post };
}

type Body = {
  id: string;
  previous_response_id: string | null;
  output: { type: string; id: string; call_id: string; name: string; arguments: string }[];
  error?: { code: string; param: string; message: string };
};
const first = [{ type: "message", role: "user", content: "Observe, record twice, finish." }];
const observeResult = (callId: string) => ({
  type: "function_call_output",
  call_id: callId,
  output: "Observation 1. nonce: n0nce42",
});

describe("stored responses", () => {
  test("a function-call round trip with only function_call_output + previous_response_id equals the full-history one", async () => {
    // Chained.
    const chained = await setup();
    const r1 = (await (await chained.post({ input: first })).json()) as Body;
    const call = r1.output.find((o) => o.type === "function_call") as Body["output"][number];
    expect(call.name).toBe("ura_observe");
    const res2 = await chained.post({ previous_response_id: r1.id, input: [observeResult(call.call_id)] });
    expect(res2.status).toBe(200);
    const r2 = (await res2.json()) as Body;
    expect(r2.previous_response_id).toBe(r1.id);
    expect(r2.output.map((o) => [o.name, o.arguments])).toEqual([
      ["ura_record", '{"nonce":"n0nce42"}'],
      ["ura_record", '{"nonce":"n0nce42"}'],
    ]);

    // Full history, in a fresh sidecar (the scripted upstream numbers its calls the same way).
    const full = await setup();
    const f1 = (await (await full.post({ input: first })).json()) as Body;
    const fullCall = f1.output[0] as Body["output"][number];
    const history = [
      ...first,
      {
        type: "function_call",
        call_id: fullCall.call_id,
        name: fullCall.name,
        arguments: fullCall.arguments,
      },
    ];
    const f2 = (await (
      await full.post({ input: [...history, observeResult(fullCall.call_id)] })
    ).json()) as Body;

    // The same conversation went upstream, and the ledger saw the same call identities.
    expect(chained.scripted.received[1]?.body).toEqual(full.scripted.received[1]?.body);
    const registered = (dir: string) =>
      records(dir, "ledger")
        .filter((e) => e.type === "registered")
        .map((e) => (e.calls as { id: string; tool: string }[]).map((c) => [c.id, c.tool]));
    expect(registered(chained.episode.records.dir)).toEqual(registered(full.episode.records.dir));
    expect(registered(chained.episode.records.dir)).toEqual([
      [[call.call_id, "observe"]],
      r2.output.map((o) => [o.call_id, "record"]),
    ]);
    expect(f2.output.map((o) => o.call_id)).toEqual(r2.output.map((o) => o.call_id));
  });

  test("chains compose: the third turn carries the first two turns' input and output", async () => {
    const { post, scripted } = await setup();
    const r1 = (await (await post({ input: first })).json()) as Body;
    const r2 = (await (
      await post({ previous_response_id: r1.id, input: [observeResult(r1.output[0]?.call_id ?? "")] })
    ).json()) as Body;
    const outputs = r2.output.map((o) => ({
      type: "function_call_output",
      call_id: o.call_id,
      output: "recorded",
    }));
    const r3 = await post({ previous_response_id: r2.id, input: outputs });
    expect(r3.status).toBe(200);
    const roles = (
      scripted.received.at(2)?.body as { messages: { role: string }[] } | undefined
    )?.messages.map((m) => m.role);
    expect(roles).toEqual(["user", "assistant", "tool", "assistant", "tool", "tool"]);
  });

  test("item_reference resolves to the item of a delivered response", async () => {
    const { post, scripted } = await setup();
    const r1 = (await (await post({ input: first })).json()) as Body;
    const item = r1.output[0] as Body["output"][number];
    const res = await post({
      input: [...first, { type: "item_reference", id: item.id }, observeResult(item.call_id)],
    });
    expect(res.status).toBe(200);
    const messages = (
      scripted.received[1]?.body as
        | { messages: { role: string; tool_calls?: { id: string }[] }[] }
        | undefined
    )?.messages;
    expect(messages?.[1]?.tool_calls?.map((c) => c.id)).toEqual([item.call_id]);
    const missing = await post({ input: [{ type: "item_reference", id: "fc_nope" }] });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as Body).error).toMatchObject({
      code: "item_not_found",
      param: "input[0].id",
    });
  });

  test("store:false, unknown and other-episode ids are 404 previous_response_not_found; nothing goes upstream", async () => {
    const { post, scripted, createEpisode } = await setup();
    const unstored = (await (await post({ input: first, store: false })).json()) as Body;
    const other = createEpisode();
    const elsewhere = (await (await post({ input: first }, other)).json()) as Body;
    const sent = scripted.received.length;
    for (const [id, says] of [
      [unstored.id, "store: false"],
      ["resp_unknown", "no response"],
      [elsewhere.id, "no response"],
    ] as const) {
      const res = await post({ previous_response_id: id, input: "next" });
      expect(res.status).toBe(404);
      const body = (await res.json()) as Body;
      expect(body.error).toMatchObject({
        code: "previous_response_not_found",
        param: "previous_response_id",
      });
      expect(body.error?.message).toContain(says);
    }
    expect(scripted.received).toHaveLength(sent);
  });

  test("a revoked or still undelivered response cannot be continued (400, naming the field)", () => {
    const store = createResponseStore();
    const earlier = { type: "message" as const, role: "user" as const, content: "a" };
    store.put([earlier], { id: "resp_a", output: [] }, true);
    store.put([], { id: "resp_b", output: [] }, true);
    store.settle("resp_b", "revoked");
    const request = (id: string) => ({ model: "m", input: "x", previous_response_id: id });
    expect(() => resolveStoredInput(request("resp_a"), store)).toThrow("still being delivered");
    expect(() => resolveStoredInput(request("resp_b"), store)).toThrow("was not delivered");
    store.settle("resp_a", "delivered");
    store.settle("resp_a", "revoked"); // a settled delivery stays settled
    expect(resolveStoredInput(request("resp_a"), store)).toEqual({
      input: [earlier, { type: "message", role: "user", content: "x" }],
      previousItems: 1,
    });
  });
});
