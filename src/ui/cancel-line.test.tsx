import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { failedAttempt } from "../../test/support/exchange-line-fields.ts";
import { bareExchange, renderTimeline } from "../../test/support/timeline-page.ts";
import { openRecords } from "../records/read-records.ts";
import { readTimeline } from "./read-timeline.ts";

test("a cancelled exchange says on the page where it was and why, from a line of today and an older one", () => {
  const data = mkdtempSync(join(tmpdir(), "ura-ui-cancel-"));
  const dir = join(data, "episodes", "ep_1");
  mkdirSync(dir, { recursive: true });
  const message = "upstream request cancelled: the client closed the request";
  const lines = [
    { exchange: "ex_0001", stage: "upstream_response", attempts: [failedAttempt], raw: null, error: message },
    {
      exchange: "ex_0002",
      stage: "upstream_response",
      attempts: [failedAttempt],
      raw: null,
      error: "upstream request cancelled: the sidecar is shutting down",
      cancelled: { at: "queue", reason: "shutdown" },
    },
    {
      exchange: "ex_0003",
      stage: "upstream_response",
      attempts: [failedAttempt],
      raw: null,
      error: "HTTP 503",
    },
  ];
  writeFileSync(join(dir, "exchanges.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
  const exchanges = readTimeline(openRecords(data), dir).exchanges;
  expect(exchanges.map((x) => x.cancelled)).toEqual([
    { at: "backoff", reason: "client_closed" },
    { at: "queue", reason: "shutdown" },
    undefined,
  ]);
  const [older, today, failure] = exchanges.map((x) => renderTimeline(x));
  expect(older).toContain(
    '<p class="note cancelled">cancelled while waiting to retry: the client closed the request</p>',
  );
  expect(today).toContain(
    "cancelled while waiting in the upstream queue for a retry: the sidecar is shutting down",
  );
  expect(failure).not.toContain('class="note cancelled"');
  expect(renderTimeline(bareExchange())).not.toContain('class="note cancelled"');
});
