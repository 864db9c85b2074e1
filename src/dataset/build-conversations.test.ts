import { expect, test } from "bun:test";
import { buildConversations } from "./build-conversations.ts";
import type { ExchangeStages } from "./read-episode.ts";

type Msg = Record<string, unknown>;
function exchange(
  id: string,
  messages: Msg[],
  answer: string,
  options: { tools?: unknown[]; reduced?: boolean; status?: "delivered" | "failed" | "revoked" } = {},
): ExchangeStages {
  const head = { exchange: id };
  return {
    id,
    stages: {
      after_context: { ...head, stage: "after_context", decision: { reduced: options.reduced ?? false } },
      upstream_request: {
        ...head,
        stage: "upstream_request",
        body: { messages, ...(options.tools ? { tools: options.tools } : {}) },
      },
      upstream_response: { ...head, stage: "upstream_response", validated: { text: answer, toolCalls: [] } },
      status: { ...head, stage: "status", status: options.status ?? "delivered" },
    },
  };
}
const sys = { role: "system", content: "s" };
const u = (t: string) => ({ role: "user", content: t });
const a = (t: string) => ({ role: "assistant", content: t });
const tools = [{ type: "function", function: { name: "x", description: "", parameters: {} } }];

test("exchanges that resend the history form one conversation; a side request is its own", () => {
  const { conversations } = buildConversations([
    exchange("ex_1", [{ role: "system", content: "title" }, u("hi")], "Title", {}),
    exchange("ex_2", [sys, u("hi")], "one", { tools }),
    exchange("ex_3", [sys, u("hi"), a("one"), u("more")], "two", { tools }),
  ]);
  expect(conversations.map((c) => c.exchanges)).toEqual([["ex_1"], ["ex_2", "ex_3"]]);
  expect(conversations[1]?.answer).toEqual({ role: "assistant", content: "two" });
});

test("a history that does not carry the model's answer verbatim starts a new conversation", () => {
  const { conversations } = buildConversations([
    exchange("ex_1", [sys, u("hi")], "one", { tools }),
    exchange("ex_2", [sys, u("hi"), a("ONE (edited by the client)"), u("more")], "two", { tools }),
  ]);
  expect(conversations.map((c) => c.exchanges)).toEqual([["ex_1"], ["ex_2"]]);
});

test("a request the context policy reduced starts a new conversation, linked to the one it rewrote", () => {
  const { conversations } = buildConversations([
    exchange("ex_1", [sys, u("img")], "one", { tools }),
    exchange("ex_2", [sys, u("img"), a("one"), u("img2")], "two", { tools }),
    exchange("ex_3", [sys, u("[omitted]"), a("one"), u("img2"), a("two"), u("img3")], "three", {
      tools,
      reduced: true,
    }),
    exchange(
      "ex_4",
      [sys, u("[omitted]"), a("one"), u("img2"), a("two"), u("img3"), a("three"), u("x")],
      "four",
      { tools, reduced: true },
    ),
  ]);
  expect(conversations.map((c) => [c.exchanges, c.contextReduced, c.continuesReducedHistoryOf])).toEqual([
    [["ex_1", "ex_2"], false, undefined],
    [["ex_3", "ex_4"], true, "ex_2"],
  ]);
});

test("a request body_budget reduced, recorded before its decision moved to after_context, is reduced too", () => {
  const old = (id: string, messages: Msg[], answer: string) => {
    const line = exchange(id, messages, answer, { tools });
    const request = line.stages.upstream_request;
    if (request) line.stages.upstream_request = { ...request, context: { reduced: true } };
    return line;
  };
  const { conversations } = buildConversations([
    exchange("ex_1", [sys, u("img")], "one", { tools }),
    old("ex_2", [sys, u("[omitted]"), a("one"), u("img2")], "two"),
  ]);
  expect(conversations.map((c) => [c.exchanges, c.contextReduced])).toEqual([
    [["ex_1"], false],
    [["ex_2"], true],
  ]);
});

test("revoked and failed exchanges are left out; a delivered one without its response is reported", () => {
  const broken = exchange("ex_3", [sys], "x", { tools });
  delete broken.stages.upstream_response;
  const { conversations, unusable } = buildConversations([
    exchange("ex_1", [sys, u("hi")], "one", { tools, status: "revoked" }),
    exchange("ex_2", [sys, u("hi")], "one", { tools, status: "failed" }),
    broken,
  ]);
  expect(conversations).toEqual([]);
  expect(unusable).toEqual(["ex_3: delivered, but its validated upstream response is not recorded"]);
});
