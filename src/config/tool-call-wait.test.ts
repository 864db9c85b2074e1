import { expect, test } from "bun:test";
import { configSchema } from "./schema.ts";
import { longestToolCallMs, toolCallAnswerMarginMs } from "./tool-call-wait.ts";

const delivery = { wait_ms: 15_000, previous_ack_wait_ms: 60_000 };

test("with a robot controller: both ledger waits, every submission with its back-off, the receipt timeout and its last poll", () => {
  const executor = {
    kind: "http" as const,
    url: "http://127.0.0.1:9000",
    timeout_ms: 10_000,
    receipt_timeout_ms: 900_000,
    poll_wait_ms: 20_000,
    submit_attempts: 3,
    receipt_attempts: 5,
    retry_delay_ms: 250,
  };
  // 3 submissions of 10 s with 250 + 500 ms between them; 900 s of receipt plus one 10 s poll past it.
  expect(longestToolCallMs({ delivery, executor })).toBe(
    15_000 + 60_000 + 30_750 + 910_000 + toolCallAnswerMarginMs,
  );
});

test("with the inert executor: its two delays after the ledger waits", () => {
  const executor = { kind: "inert" as const, ack_delay_ms: 2_000, receipt_delay_ms: 5_000 };
  expect(longestToolCallMs({ delivery, executor })).toBe(15_000 + 60_000 + 7_000 + toolCallAnswerMarginMs);
});

test("a longer receipt timeout in the sidecar's config makes the clients wait longer", () => {
  const config = (receipt_timeout_ms: number) =>
    configSchema.parse({ executor: { kind: "http", url: "http://127.0.0.1:9000", receipt_timeout_ms } });
  expect(longestToolCallMs(config(1_200_000)) - longestToolCallMs(config(600_000))).toBe(600_000);
});
