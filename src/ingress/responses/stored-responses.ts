/**
 * The stateful part of the Responses API, served from what the episode itself
 * delivered: `previous_response_id` and `item_reference` input items.
 *
 * A response is stored when it was rendered for a request with `store` not false
 * (the API's default is true), and becomes resolvable only once it was fully
 * delivered; a revoked delivery (the client went away) is never resolvable, as
 * its tool calls were revoked too. Its stored items are its effective input (the
 * chain it continued, already resolved, plus its own input) followed by its
 * output as input items, so `previous_response_id` yields exactly "that
 * response's input + output" and the new input follows (chained, as the API
 * defines). Stores are per episode: another episode's id is unknown here. They
 * live as long as the process (a restarted sidecar answers 404 for earlier ids).
 */
import { SidecarError } from "../../lib/errors.ts";
import type { OutputItem } from "./from-hub.ts";
import type { InputItem, ResponsesRequest } from "./schema.ts";

type StoredResponse =
  | { state: "pending" | "delivered" | "revoked"; items: InputItem[]; outputById: Map<string, InputItem> }
  | { state: "not_stored" };

export type ResponseStore = {
  /** Records a rendered response, pending delivery: its effective input, then its output. */
  put: (id: string, input: InputItem[], output: readonly OutputItem[], store: boolean) => void;
  settle: (id: string, outcome: "delivered" | "revoked") => void;
  get: (id: string) => StoredResponse | undefined;
  /** An output item of a delivered response, by its item id (`item_reference`). */
  item: (itemId: string) => InputItem | undefined;
};

const stores = new WeakMap<object, ResponseStore>();

/** The response store of one episode (created on first use). */
export function responseStoreOf(episode: object): ResponseStore {
  let store = stores.get(episode);
  if (!store) {
    const responses = new Map<string, StoredResponse>();
    store = {
      put: (id, input, output, keep) => {
        if (!keep) {
          responses.set(id, { state: "not_stored" });
          return;
        }
        const asInput = outputAsInput(output);
        const outputById = new Map(output.map((item, i) => [item.id, asInput[i] as InputItem]));
        responses.set(id, { state: "pending", items: [...input, ...asInput], outputById });
      },
      settle: (id, outcome) => {
        const entry = responses.get(id);
        if (entry && entry.state === "pending") entry.state = outcome;
      },
      get: (id) => responses.get(id),
      item: (itemId) => {
        for (const entry of responses.values())
          if (entry.state === "delivered" && entry.outputById.has(itemId))
            return entry.outputById.get(itemId);
        return undefined;
      },
    };
    stores.set(episode, store);
  }
  return store;
}

/** Output items as the input items a client would send back for them. */
export function outputAsInput(output: readonly OutputItem[]): InputItem[] {
  return output.map((item): InputItem => {
    if (item.type === "message")
      return {
        type: "message",
        role: "assistant",
        content: item.content.map((part) => ({ type: "output_text", text: part.text })),
      };
    return {
      type: "function_call",
      call_id: item.call_id,
      name: item.name,
      ...(item.namespace ? { namespace: item.namespace } : {}),
      arguments: item.arguments,
    };
  });
}

function notFound(param: string, message: string, code: string): SidecarError {
  return new SidecarError("not_found", `${param}: ${message}`, { param, code });
}

/** The stored items of a delivered response, or the error the client must see. */
function itemsOf(store: ResponseStore, id: string, param: string): InputItem[] {
  const entry = store.get(id);
  if (entry === undefined)
    throw notFound(
      param,
      `no response ${JSON.stringify(id)} was delivered in this episode`,
      "previous_response_not_found",
    );
  if (entry.state === "not_stored")
    throw notFound(
      param,
      `response ${JSON.stringify(id)} was created with store: false and is not stored; send the conversation in input`,
      "previous_response_not_found",
    );
  if (entry.state === "revoked")
    throw new SidecarError(
      "invalid_request",
      `${param}: response ${JSON.stringify(id)} was not delivered (the client went away before its end), so it cannot be continued`,
      { param, code: "previous_response_not_found" },
    );
  if (entry.state === "pending")
    throw new SidecarError(
      "invalid_request",
      `${param}: response ${JSON.stringify(id)} is still being delivered`,
      { param, code: "previous_response_not_found" },
    );
  return entry.items;
}

/** The effective input, and how many of its first items came from `previous_response_id`. */
export type ResolvedInput = { input: InputItem[] | string; previousItems: number };

/**
 * The request with its stored parts resolved: `input` becomes the previous
 * response's items followed by the new input, each `item_reference` the item it
 * names. Pure apart from reading the store.
 */
export function resolveStoredInput(request: ResponsesRequest, store: ResponseStore): ResolvedInput {
  const previous = request.previous_response_id
    ? itemsOf(store, request.previous_response_id, "previous_response_id")
    : [];
  const previousItems = previous.length;
  if (typeof request.input === "string") {
    if (previousItems === 0) return { input: request.input, previousItems };
    return { input: [...previous, { type: "message", role: "user", content: request.input }], previousItems };
  }
  const input = request.input.map((item, i) => {
    if (item.type !== "item_reference") return item;
    const found = store.item(item.id);
    if (!found)
      throw notFound(
        `input[${i}].id`,
        `no item ${JSON.stringify(item.id)} in a stored response of this episode`,
        "item_not_found",
      );
    return found;
  });
  return { input: [...previous, ...input], previousItems };
}
