/**
 * Recorded client requests as test cases: `fixtures/<protocol>/<case>/` holds the
 * client's request (client-request.json, meta.json) and the golden of what must go
 * upstream (upstream-request.json). A missing golden fails; URA_UPDATE_GOLDEN=1
 * rewrites them (then review the diff).
 */
import { expect } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { jsonBodyOf } from "../../src/body/parse-json-body.ts";
import type { Protocol } from "../../src/hub/protocol.ts";
import { type HubRequest, type HubToolCall, hubRequestSchema } from "../../src/hub/schema.ts";
import * as gemini from "../../src/ingress/gemini/to-hub.ts";
import * as messages from "../../src/ingress/messages/to-hub.ts";
import { createResponseStore } from "../../src/ingress/responses/stored-responses.ts";
import * as responses from "../../src/ingress/responses/to-hub.ts";
import { buildChatRequest } from "../../src/upstream/build-chat-request.ts";

const goldenTarget = { model: "qwen3-vl-plus", imageInput: true, parallelToolCalls: true };

/** A hub request as the upstream would receive it, for the target the goldens were made with. */
export function toGoldenUpstream(hub: HubRequest) {
  // The translation's output must be a hub request exactly: valid, and nothing extra.
  expect(hubRequestSchema.parse(hub)).toEqual(hub);
  return buildChatRequest(hub, goldenTarget);
}

export function fixtureCases(protocol: Protocol) {
  const dir = resolve(import.meta.dir, "../../fixtures", protocol);
  const read = (name: string, file: string) => JSON.parse(readFileSync(join(dir, name, file), "utf8"));
  return {
    /** The exact JSON body the client sent. */
    clientRequest: (name: string): Record<string, unknown> => read(name, "client-request.json"),
    /** How it was recorded (client, version, headers). */
    meta: (name: string): Record<string, unknown> & { headers: Record<string, string> } =>
      read(name, "meta.json"),
    /** The hub request, built for Qwen, equals the reviewed golden upstream request. */
    expectGolden(name: string, hub: HubRequest): void {
      const file = join(dir, name, "upstream-request.json");
      const actual = `${JSON.stringify(toGoldenUpstream(hub), null, 2)}\n`;
      if (process.env.URA_UPDATE_GOLDEN === "1") writeFileSync(file, actual);
      if (!existsSync(file))
        throw new Error(`${file} is missing: run with URA_UPDATE_GOLDEN=1 and review it`);
      expect(actual).toBe(readFileSync(file, "utf8"));
    },
  };
}

/**
 * A recorded client body translated by its protocol's spoke, with the context the
 * route would give it (Gemini: a generate call for ura-qwen; Messages: the recorded
 * anthropic-beta header).
 */
export function translateFixture(
  protocol: Protocol,
  body: unknown,
  headers: Record<string, string> = {},
): HubRequest {
  switch (protocol) {
    case "responses":
      return responses.toHub(jsonBodyOf(body), {
        createdAt: 0,
        now: () => 0,
        newResponseId: () => "resp_0",
        store: createResponseStore,
      }).hub;
    case "gemini":
      return gemini.toHub(jsonBodyOf(body), {
        operation: { kind: "generate", model: "ura-qwen", stream: false, sse: false },
      }).hub;
    case "messages":
      return messages.toHub(jsonBodyOf(body), { betaFlags: headers["anthropic-beta"]?.split(",") ?? [] }).hub;
  }
}

/**
 * The last turn of a recorded tool-image request: the assistant made exactly this
 * call, and the tool message answering it carries parts of these types (in order).
 */
export function expectToolTurn(hub: HubRequest, call: HubToolCall, partTypes: ("text" | "image")[]): void {
  expect(hub.messages.at(-2)).toEqual({ role: "assistant", text: null, toolCalls: [call] });
  const tool = hub.messages.at(-1);
  expect(tool).toMatchObject({ role: "tool", toolCallId: call.id, name: call.name });
  expect(tool?.role === "tool" && tool.content.map((p) => p.type)).toEqual(partTypes);
}

/**
 * Upstream, a tool result's PNG travels in the user message right after the tool
 * message, labelled with the call (Qwen takes images only in user messages).
 */
export function expectImageAfterToolMessage(hub: HubRequest, callId: string): void {
  const chat = toGoldenUpstream(hub);
  expect(chat.messages.slice(-2).map((m) => m.role)).toEqual(["tool", "user"]);
  expect(chat.messages.at(-2)).toMatchObject({ role: "tool", tool_call_id: callId });
  const last = JSON.stringify(chat.messages.at(-1));
  expect(last).toContain("data:image/png;base64,iVBORw0KGgo");
  expect(last).toContain(callId);
}
