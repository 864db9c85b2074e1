/**
 * Recorded client requests as test cases: `fixtures/<protocol>/<case>/` holds the
 * client's request (client-request.json, meta.json) and the golden of what must go
 * upstream (upstream-request.json). A missing golden fails; URA_UPDATE_GOLDEN=1
 * rewrites them (then review the diff).
 */
import { expect } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type HubRequest, hubRequestSchema } from "../../src/hub/schema.ts";
import { SidecarError } from "../../src/lib/errors.ts";
import type { JsonBody } from "../../src/lib/parse-json-body.ts";
import { buildChatRequest } from "../../src/upstream/build-chat-request.ts";

const goldenTarget = { model: "qwen3-vl-plus", imageInput: true, parallelToolCalls: true };

/** A hub request as the upstream would receive it, for the target the goldens were made with. */
export function toGoldenUpstream(hub: HubRequest) {
  // The translation's output must be a hub request exactly: valid, and nothing extra.
  expect(hubRequestSchema.parse(hub)).toEqual(hub);
  return buildChatRequest(hub, goldenTarget);
}

export function fixtureCases(protocol: "responses" | "gemini" | "messages") {
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

/** A client body as an ingress receives it, from a value. */
export function jsonBody(value: unknown): JsonBody {
  return { parsed: true, value, text: JSON.stringify(value) };
}

/** The SidecarError a call throws (fails the test if it throws nothing or something else). */
export function sidecarErrorOf(fn: () => unknown): SidecarError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SidecarError) return error;
    throw error;
  }
  throw new Error("expected a SidecarError");
}
