/**
 * Every recorded client request of every protocol translates to a hub request that
 * the hub schema accepts as it is: nothing missing, nothing extra (parsing strips
 * unknown keys, so equality after parsing means there were none).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type HubRequest, hubRequestSchema } from "../../src/hub/schema.ts";
import * as gemini from "../../src/ingress/gemini/to-hub.ts";
import * as messages from "../../src/ingress/messages/to-hub.ts";
import { responseStoreOf } from "../../src/ingress/responses/stored-responses.ts";
import * as responses from "../../src/ingress/responses/to-hub.ts";
import { jsonBody } from "../support/fixture-cases.ts";

const fixturesDir = resolve(import.meta.dir, "../../fixtures");

const translators: Record<string, (body: unknown, meta: { headers?: Record<string, string> }) => HubRequest> =
  {
    responses: (body) =>
      responses.toHub(jsonBody(body), {
        createdAt: 0,
        now: () => 0,
        newResponseId: () => "resp_0",
        store: responseStoreOf({}),
      }).hub,
    gemini: (body) =>
      gemini.toHub(jsonBody(body), {
        operation: { kind: "generate", model: "ura-qwen", stream: false, sse: false },
      }).hub,
    messages: (body, meta) =>
      messages.toHub(jsonBody(body), { betaFlags: meta.headers?.["anthropic-beta"]?.split(",") ?? [] }).hub,
  };

describe("translated hub requests match the hub schema", () => {
  for (const [protocol, translate] of Object.entries(translators)) {
    for (const name of readdirSync(join(fixturesDir, protocol))) {
      const dir = join(fixturesDir, protocol, name);
      if (!existsSync(join(dir, "client-request.json"))) continue;
      test(`${protocol}/${name}`, () => {
        const body: unknown = JSON.parse(readFileSync(join(dir, "client-request.json"), "utf8"));
        const meta = JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")) as {
          headers?: Record<string, string>;
        };
        const hub = translate(body, meta);
        expect(hubRequestSchema.parse(hub)).toEqual(hub);
        expect(hub.messages.length).toBeGreaterThan(0);
      });
    }
  }
});
