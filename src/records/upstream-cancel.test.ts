import { describe, expect, test } from "bun:test";
import { failedAttempt } from "../../test/support/exchange-line-fields.ts";
import { readExchangeLine } from "./exchange-lines.ts";
import { cancelMessage, recordedCancel } from "./upstream-cancel.ts";

const cut = { attempt: 2, started_at: "2026-12-05T00:00:01.000Z", ms: 5, status: 200, ended: "cancelled" };
/** An upstream_response line as read back by the records' schema. */
const line = (members: Record<string, unknown>) =>
  readExchangeLine("upstream_response", {
    v: 3,
    exchange: "ex_0001",
    stage: "upstream_response",
    ...members,
  });

describe("the cancellation an upstream_response line records", () => {
  test("read from the structured member, whatever the message says", () => {
    expect(
      recordedCancel(
        line({
          attempts: [failedAttempt],
          raw: null,
          error: "anything",
          cancelled: { at: "queue", reason: "shutdown" },
        }),
      ),
    ).toEqual({ at: "queue", reason: "shutdown" });
    expect(
      recordedCancel(
        line({ attempts: [failedAttempt, cut], cancelled: { at: "attempt", reason: "client_closed" } }),
      ),
    ).toEqual({ at: "attempt", reason: "client_closed" });
  });

  test("a line written before the member: read from its message and its last attempt", () => {
    const message = "upstream request cancelled: the client closed the request";
    expect(recordedCancel(line({ attempts: [failedAttempt], raw: null, error: message }))).toEqual({
      at: "backoff",
      reason: "client_closed",
    });
    expect(
      recordedCancel(
        line({
          attempts: [failedAttempt, cut],
          raw: null,
          error: "upstream request cancelled: the episode was cancelled",
        }),
      ),
    ).toEqual({ at: "attempt", reason: "episode_cancelled" });
    expect(
      recordedCancel(
        line({ attempts: [cut], error: "upstream request cancelled: the sidecar is shutting down" }),
      ),
    ).toEqual({ at: "attempt", reason: "shutdown" });
  });

  test("the message the writer gives is the one an old line is read by", () => {
    for (const reason of ["client_closed", "episode_cancelled", "shutdown"] as const)
      expect(recordedCancel({ attempts: [failedAttempt], error: cancelMessage(reason) })).toEqual({
        at: "backoff",
        reason,
      });
  });

  test("an answered, refused or failed exchange was not cancelled", () => {
    expect(recordedCancel(undefined)).toBeUndefined();
    expect(
      recordedCancel(
        line({ attempts: [{ ...failedAttempt, ended: "answered" }], validated: { text: "hi" } }),
      ),
    ).toBe(undefined);
    expect(
      recordedCancel(
        line({ attempts: [{ ...failedAttempt, ended: "invalid_answer" }], error: 'undeclared tool "rm"' }),
      ),
    ).toBeUndefined();
    expect(
      recordedCancel(line({ attempts: [failedAttempt], error: "HTTP 503 (after 3 attempts)" })),
    ).toBeUndefined();
  });
});
