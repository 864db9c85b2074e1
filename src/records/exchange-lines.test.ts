import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { answer, failedStatus, noImages } from "../../test/support/exchange-line-fields.ts";
import { createBlobStore } from "./blob-store.ts";
import { createEpisodeRecords } from "./episode-records.ts";
import { exchangeStageSchema, readExchangeLine } from "./exchange-lines.ts";
import { openRecords } from "./read-records.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function episodeRecords() {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-exchange-lines-"));
  dirs.push(dataDir);
  const dir = join(dataDir, "episodes", "ep_0123456789abcdef");
  const records = createEpisodeRecords({
    dir,
    clock: () => 0,
    redact: (line) => line,
    blobs: createBlobStore(dataDir),
  });
  return { dataDir, dir, records };
}

const decision = {
  policy: "identity" as const,
  estimate_before: 3,
  estimate_after: 3,
  reduced: false,
  images_omitted: [],
  blocks_removed: [],
};

test("every stage the verbs write reads back through its schema, with the fields it was given", () => {
  const { dataDir, dir, records } = episodeRecords();
  records.clientRequest(
    "ex_0001",
    { protocol: "gemini", path: "/e/ep_x/gemini/v1beta/models/q" },
    { json: "{}" },
  );
  records.afterContext("ex_0001", { request: "identical to the translated request", decision });
  records.upstreamRequest("ex_0001", { images: noImages, ignored: ["cache_control"] }, '{"model":"q"}');
  records.upstreamResponse("ex_0001", {
    attempts: [
      {
        attempt: 1,
        started_at: "1970-01-01T00:00:00.000Z",
        ms: 5,
        queue_ms: 0,
        status: 200,
        ended: "answered",
      },
    ],
    raw: "data: [DONE]\n\n",
    validated: answer,
  });
  records.delivered("ex_0001", { content_type: "text/event-stream" }, "data: {}\n\n");
  records.status("ex_0001", { status: "delivered", batch: null });
  records.clientRequest(
    "ex_0002",
    { protocol: "messages", path: "/e/ep_x/anthropic/v1/messages" },
    { text: "{" },
  );
  records.status("ex_0002", failedStatus);

  const [first, second] = openRecords(dataDir).readEpisodeDir(dir).exchanges;
  for (const stage of exchangeStageSchema.options) expect(first?.line(stage)).toBeDefined();
  expect(first?.line("client_request")?.protocol).toBe("gemini");
  expect(first?.line("upstream_request")?.ignored).toEqual(["cache_control"]);
  expect(first?.line("upstream_response")?.validated?.usage).toEqual({ inputTokens: 1, outputTokens: 1 });
  expect(first?.line("delivered")?.body).toBe("data: {}\n\n");
  expect(second?.line("client_request")?.body_text).toBe("{");
  expect(second?.line("status")?.error?.kind).toBe("invalid_request");
  expect(second?.line("after_context")).toBeUndefined();
});

test("the verbs write the lines docs/records.md shows, member for member", () => {
  const { dir, records } = episodeRecords();
  records.clientRequest(
    "ex_0001",
    { protocol: "responses", path: "/e/ep_x/v1/responses", body_omitted: "records.max_bytes" },
    undefined,
  );
  records.status("ex_0001", {
    status: "revoked",
    reason: "client went away",
    frames_sent: 2,
    batch: "ex_0001",
  });
  expect(readFileSync(join(dir, "exchanges.jsonl"), "utf8").split("\n")).toEqual([
    '{"v":3,"at":"1970-01-01T00:00:00.000Z","exchange":"ex_0001","stage":"client_request","protocol":"responses","path":"/e/ep_x/v1/responses","body_omitted":"records.max_bytes"}',
    '{"v":3,"at":"1970-01-01T00:00:00.000Z","exchange":"ex_0001","stage":"status","status":"revoked","reason":"client went away","frames_sent":2,"batch":"ex_0001"}',
    "",
  ]);
});

test("a line of an older format reads with the members it has; another stage's line does not", () => {
  // Version 1: no `v`, no `path`; its decision without the members added since.
  const old = { at: "2026-01-01T00:00:00.000Z", exchange: "ex_0001", stage: "after_context", decision: {} };
  expect(readExchangeLine("after_context", old)?.decision).toEqual({});
  const request = { at: "2026-01-01T00:00:00.000Z", exchange: "ex_0001", stage: "client_request" };
  expect(readExchangeLine("client_request", { ...request, protocol: "responses" })?.path).toBeUndefined();
  expect(readExchangeLine("status", request)).toBeUndefined();
});
