/**
 * Every episode's response store, served from the episode's own records: the
 * first time an episode's store is needed in this process it is rebuilt from its
 * exchanges (client request, delivered body, status), then kept current by the
 * Responses route. So a restarted sidecar still knows which responses an episode
 * delivered, which were `store: false`, and what each one's chain was.
 *
 * Rebuilding replays what the route did: each delivered Responses exchange in
 * order, its request's `previous_response_id` and `item_reference`s resolved
 * against the responses before it, its output read from what was delivered (the
 * JSON body, or the stream's final `response`). A revoked or failed exchange left
 * no delivered body, so its response is unknown after a restart (404), as it was
 * never resolvable before.
 */
import { z } from "zod";
import { unsplit } from "../../body/split-text.ts";
import type { RecordedExchange, Records } from "../../records/read-records.ts";
import { parseSseText } from "../../sse/read-sse.ts";
import type { OutputItem } from "./from-hub.ts";
import { parseRequest } from "./parse-request.ts";
import type { InputItem } from "./schema.ts";
import {
  createResponseStore,
  type DeliveredResponse,
  effectiveInput,
  type ResponseStore,
  resolveStoredInput,
} from "./stored-responses.ts";

/** An episode as the stores know it: the object the episode store holds, and its id. */
type EpisodeRef = { readonly id: string };

export type ResponseStores = {
  /** The store of an episode, rebuilt from its records on first use. */
  of: (episode: EpisodeRef) => ResponseStore;
};

type RecordsReader = Pick<Records, "episodeIds" | "readEpisode" | "clientRequestText" | "deliveredText">;

/** Only the fields read back; the rest of the object is kept as delivered (it is what a retrieve returns). */
const deliveredResponseSchema = z.looseObject({
  id: z.string().min(1),
  output: z.array(
    z.discriminatedUnion("type", [
      z.looseObject({
        type: z.literal("message"),
        id: z.string(),
        content: z.array(z.looseObject({ text: z.string() })),
      }),
      z.looseObject({
        type: z.literal("function_call"),
        id: z.string(),
        call_id: z.string(),
        name: z.string(),
        namespace: z.string().optional(),
        arguments: z.string(),
      }),
    ]),
  ),
});

export function createResponseStores(records: RecordsReader): ResponseStores {
  // Keyed by the episode object: a store lives no longer than its episode.
  const stores = new WeakMap<EpisodeRef, ResponseStore>();
  return {
    of(episode) {
      const episodeId = episode.id;
      let store = stores.get(episode);
      if (!store) {
        const exchanges = records.episodeIds().includes(episodeId)
          ? records.readEpisode(episodeId).exchanges
          : [];
        store = restoreResponseStore(exchanges, records);
        stores.set(episode, store);
      }
      return store;
    },
  };
}

/** The response object an exchange delivered, if it delivered one. */
function readDelivered(exchange: RecordedExchange, records: RecordsReader): DeliveredResponse | undefined {
  const text = records.deliveredText(exchange);
  if (text === undefined) return undefined;
  const json = exchange.line("delivered")?.content_type?.startsWith("application/json") === true;
  const value = json
    ? JSON.parse(text)
    : parseSseText(text)
        .map((event) => JSON.parse(event.data) as { response?: unknown })
        .findLast((data) => data.response !== undefined)?.response;
  const parsed = deliveredResponseSchema.safeParse(value);
  // The output items are the renderer's own (from-hub.ts), read back.
  return parsed.success
    ? (parsed.data as unknown as DeliveredResponse & { output: OutputItem[] })
    : undefined;
}

/** Replays an episode's recorded Responses exchanges into a new store. */
export function restoreResponseStore(
  exchanges: readonly RecordedExchange[],
  records: RecordsReader,
): ResponseStore {
  const store = createResponseStore();
  for (const exchange of exchanges) {
    const request = exchange.line("client_request");
    if (request?.protocol !== "responses" || request.path?.endsWith("/v1/responses") !== true) continue;
    if (exchange.line("status")?.status !== "delivered") continue;
    const response = readDelivered(exchange, records);
    if (!response) continue;
    const body = request.body as { store?: unknown } | undefined;
    if (body?.store === false) {
      // Never resolvable: the (possibly large) request need not be read.
      store.put([], response, false);
      continue;
    }
    const text = records.clientRequestText(exchange);
    if (text === undefined) continue;
    let input: InputItem[];
    try {
      const received = parseRequest({ parsed: true, value: JSON.parse(text), received: unsplit(text) });
      input = effectiveInput(resolveStoredInput(received, store).input);
    } catch {
      // It resolved when it was delivered; records that no longer say so leave it unknown (404).
      continue;
    }
    store.put(input, response, true);
    store.settle(response.id, "delivered");
  }
  return store;
}
