/**
 * The stateful part of the Responses API for one episode: `previous_response_id`,
 * `item_reference` input items and retrieving a response by id.
 *
 * A response is stored when it was rendered for a request with `store` not false
 * (the API's default is true), and becomes resolvable only once it was fully
 * delivered; a revoked delivery (the client went away) is never resolvable, as
 * its tool calls were revoked too. Its stored items are its effective input (the
 * chain it continued, already resolved, plus its own input) followed by its
 * output as input items, so `previous_response_id` yields exactly "that
 * response's input + output" and the new input follows (chained, as the API
 * defines). A store belongs to one episode: another episode's id is unknown here.
 * The index is rebuilt from the episode's records when the process starts
 * (restored-responses.ts), so it holds nothing the records do not. Long strings
 * equal to one stored before are held once (intern-item-strings.ts).
 */
import { SidecarError } from "../../lib/errors.ts";
import type { OutputItem } from "./from-hub.ts";
import { createItemInterner } from "./intern-item-strings.ts";
import type { InputItem, ResponsesRequest } from "./schema.ts";

/** The response object as delivered (the JSON answer, or the stream's final `response`). */
export type DeliveredResponse = { id: string; output: readonly OutputItem[] } & Record<string, unknown>;

export type StoredResponse =
  | {
      state: "pending" | "delivered" | "revoked";
      items: InputItem[];
      outputById: Map<string, InputItem>;
      response: DeliveredResponse;
    }
  | { state: "not_stored" };

export type ResponseStore = {
  /** Records a rendered response, pending delivery: its effective input, then its output. */
  put: (input: InputItem[], response: DeliveredResponse, store: boolean) => void;
  settle: (id: string, outcome: "delivered" | "revoked") => void;
  get: (id: string) => StoredResponse | undefined;
  /** An output item of a delivered response, by its item id (`item_reference`). */
  item: (itemId: string) => InputItem | undefined;
};

export function createResponseStore(): ResponseStore {
  const responses = new Map<string, StoredResponse>();
  // Each request is a new parse: without this, a resent history is held once per turn.
  const intern = createItemInterner();
  return {
    put: (input, response, keep) => {
      if (!keep) {
        responses.set(response.id, { state: "not_stored" });
        return;
      }
      const asInput = outputAsInput(response.output);
      const outputById = new Map(response.output.map((item, i) => [item.id, asInput[i] as InputItem]));
      responses.set(response.id, {
        state: "pending",
        items: [...intern(input), ...asInput],
        outputById,
        response,
      });
    },
    settle: (id, outcome) => {
      const entry = responses.get(id);
      if (entry && entry.state === "pending") entry.state = outcome;
    },
    get: (id) => responses.get(id),
    item: (itemId) => {
      for (const entry of responses.values())
        if (entry.state === "delivered" && entry.outputById.has(itemId)) return entry.outputById.get(itemId);
      return undefined;
    },
  };
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

/** A delivered, stored response, or the error the client must see. */
export function deliveredResponse(
  store: ResponseStore,
  id: string,
  param: string,
): Extract<StoredResponse, { items: unknown }> {
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
      `${param}: response ${JSON.stringify(id)} was not delivered (the client went away before its end), so it is not stored`,
      { param, code: "previous_response_not_found" },
    );
  if (entry.state === "pending")
    throw new SidecarError(
      "invalid_request",
      `${param}: response ${JSON.stringify(id)} is still being delivered`,
      { param, code: "previous_response_not_found" },
    );
  return entry;
}

/** The effective input, and how many of its first items came from `previous_response_id`. */
export type ResolvedInput = { input: InputItem[] | string; previousItems: number };

/** The effective input as items (a string input is one user message). */
export function effectiveInput(input: ResolvedInput["input"]): InputItem[] {
  return typeof input === "string" ? [{ type: "message", role: "user", content: input }] : input;
}

/**
 * The request with its stored parts resolved: `input` becomes the previous
 * response's items followed by the new input, each `item_reference` the item it
 * names. Pure apart from reading the store.
 */
export function resolveStoredInput(request: ResponsesRequest, store: ResponseStore): ResolvedInput {
  const previous = request.previous_response_id
    ? deliveredResponse(store, request.previous_response_id, "previous_response_id").items
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
