/**
 * The longest the sidecar may hold one MCP `tools/call` before it answers, from
 * its configuration: the ledger's two bounded waits (the call's delivery, then
 * the earlier calls of its batch being acknowledged), the executor's submission
 * with all its retries, and the receipt wait. A client that gives up sooner
 * reports a timeout to the model while the robot may still be moving, and the
 * model may call the action again; so every client kit sets its client's
 * tool-call timeout to at least this (docs/clients.md).
 */

import { type ExecutorConfig, httpExecutorConfigSchema } from "../executor/executor-config.ts";
import { type Config, configSchema } from "./schema.ts";

/** Time for the answer to reach the client once the sidecar has it (and for clock skew between the two). */
export const toolCallAnswerMarginMs = 30_000;

type WaitConfig = { delivery: Config["delivery"]; executor: ExecutorConfig | HttpDefaults };
type HttpDefaults = Omit<Extract<ExecutorConfig, { kind: "http" }>, "url">;

function executorWaitMs(executor: WaitConfig["executor"]): number {
  if (executor.kind === "inert") return executor.ack_delay_ms + executor.receipt_delay_ms;
  const attempts = executor.submit_attempts;
  // n × retry_delay_ms after the n-th failed submission, none after the last one.
  const submitMs = attempts * executor.timeout_ms + (executor.retry_delay_ms * attempts * (attempts - 1)) / 2;
  // The last long-poll may start just before the deadline and run its request timeout past it.
  const receiptMs = executor.receipt_timeout_ms + executor.timeout_ms;
  return submitMs + receiptMs;
}

export function longestToolCallMs(config: WaitConfig): number {
  return (
    config.delivery.wait_ms +
    config.delivery.previous_ack_wait_ms +
    executorWaitMs(config.executor) +
    toolCallAnswerMarginMs
  );
}

/**
 * For launch info that does not say (written by an older sidecar): the documented
 * defaults with a robot controller over HTTP, the longest of the default waits.
 */
export const defaultLongestToolCallMs = longestToolCallMs({
  delivery: configSchema.shape.delivery.parse(undefined),
  executor: httpExecutorConfigSchema.omit({ url: true }).parse({ kind: "http" }),
});
