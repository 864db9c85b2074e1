/**
 * The response store rebuilt from an episode's records holds what the live route
 * stored: chained items, the delivered objects (JSON and streamed), store:false
 * as not stored, a revoked delivery unknown.
 */
import { expect, test } from "bun:test";
import {
  createResponseStores,
  restoreResponseStore,
} from "../../src/ingress/responses/restored-responses.ts";
import { resolveStoredInput } from "../../src/ingress/responses/stored-responses.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { createInProcessSidecar, postJson, responseEvents } from "../support/in-process-sidecar.ts";

const tools = ["observe", "record", "finish"].map((name) => ({
  type: "function",
  name: `ura_${name}`,
  parameters: { type: "object", properties: {} },
}));
const first = [{ type: "message", role: "user", content: "Observe, record twice, finish." }];
type Output = { type: string; id: string; call_id: string; name: string; arguments: string };
type Body = { id: string; output: Output[] };

test("rebuilt from the records: chained items, delivered objects, store:false, revoked unknown", async () => {
  const sidecar = await createInProcessSidecar();
  const episode = sidecar.createEpisode();
  const post = (body: Record<string, unknown>) =>
    postJson(
      sidecar.app,
      `/e/${episode.id}/v1/responses`,
      { model: "ura-qwen", tools, ...body },
      { authorization: `Bearer ${episode.ingressKey}` },
    );

  const r1 = (await (await post({ input: first })).json()) as Body & Record<string, unknown>;
  const call = r1.output[0] as Output;
  const answer = { type: "function_call_output", call_id: call.call_id, output: "Observation 1. nonce: n1" };
  const events = await responseEvents(
    await post({ previous_response_id: r1.id, input: [answer], stream: true }),
  );
  const r2 = events.at(-1)?.data.response as Body & Record<string, unknown>;
  const unstored = (await (await post({ input: first, store: false })).json()) as Body;
  // A client that walks away before reading: the delivery is revoked.
  const walkedAway = await post({ input: first, stream: true });
  await walkedAway.body?.cancel();
  sidecar.stop();

  const records = openRecords(sidecar.dataDir);
  const exchanges = records.readEpisode(episode.id).exchanges;
  expect(exchanges.map((e) => e.stage("status")?.value.status)).toEqual([
    "delivered",
    "delivered",
    "delivered",
    "revoked",
  ]);
  const store = restoreResponseStore(exchanges, records);

  expect(store.get(r1.id)).toMatchObject({ state: "delivered", response: r1 });
  const asInput = (o: Output) => ({
    type: "function_call",
    call_id: o.call_id,
    name: o.name,
    arguments: o.arguments,
  });
  expect(store.get(r2.id) as unknown).toEqual({
    state: "delivered",
    response: r2,
    items: [...first, asInput(call), answer, ...r2.output.map(asInput)],
    outputById: new Map(r2.output.map((o) => [o.id, asInput(o)])),
  });
  expect(store.item(call.id) as unknown).toEqual(asInput(call));
  expect(store.get(unstored.id)).toEqual({ state: "not_stored" });
  const continued = resolveStoredInput({ model: "m", input: "next", previous_response_id: r2.id }, store);
  expect(continued.previousItems).toBe(3 + r2.output.length);

  // The dependency builds an episode's store from the same records, once; an episode without records has none.
  const stores = createResponseStores(records);
  expect(stores.of(episode).get(r1.id)).toMatchObject({ state: "delivered" });
  expect(stores.of(episode)).toBe(stores.of(episode));
  expect(stores.of({ id: "ep_00000000000000000000" }).get(r1.id)).toBeUndefined();
});
