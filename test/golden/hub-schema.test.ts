/**
 * Every recorded client request of every protocol translates to a hub request that
 * the hub schema accepts as it is: nothing missing, nothing extra (parsing strips
 * unknown keys, so equality after parsing means there were none).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { hubRequestSchema } from "../../src/hub/schema.ts";
import { translateFixture } from "../support/fixture-cases.ts";

const fixturesDir = resolve(import.meta.dir, "../../fixtures");

describe("translated hub requests match the hub schema", () => {
  for (const protocol of ["responses", "gemini", "messages"] as const) {
    for (const name of readdirSync(join(fixturesDir, protocol))) {
      const dir = join(fixturesDir, protocol, name);
      if (!existsSync(join(dir, "client-request.json"))) continue;
      test(`${protocol}/${name}`, () => {
        const body: unknown = JSON.parse(readFileSync(join(dir, "client-request.json"), "utf8"));
        const meta = JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")) as {
          headers?: Record<string, string>;
        };
        const hub = translateFixture(protocol, body, meta.headers);
        expect(hubRequestSchema.parse(hub)).toEqual(hub);
        expect(hub.messages.length).toBeGreaterThan(0);
      });
    }
  }
});
