/**
 * Every recorded client request of every protocol translates to a hub request that
 * the hub schema accepts as it is: nothing missing, nothing extra (parsing strips
 * unknown keys, so equality after parsing means there were none).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type HubRequest, hubRequestSchema } from "../../src/hub/schema.ts";
import { geminiToHub } from "../../src/ingress/gemini/to-hub.ts";
import { messagesToHub } from "../../src/ingress/messages/to-hub.ts";
import { parseResponsesRequest } from "../../src/ingress/responses/parse-request.ts";
import { toHub as responsesToHub } from "../../src/ingress/responses/to-hub.ts";

const fixturesDir = resolve(import.meta.dir, "../../fixtures");

const translators: Record<string, (body: unknown, meta: { headers?: Record<string, string> }) => HubRequest> =
  {
    responses: (body) => responsesToHub(parseResponsesRequest(body)),
    gemini: (body) => geminiToHub(body, "ura-qwen"),
    messages: (body, meta) =>
      messagesToHub(body, { betaFlags: meta.headers?.["anthropic-beta"]?.split(",") ?? [] }),
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
