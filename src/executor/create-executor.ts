/**
 * One executor per episode from the `executor` config: the inert executor keeps
 * its state (current observation) per episode; the HTTP client is stateless, so
 * episodes may share one.
 */
import type { Executor } from "./executor.ts";
import type { ExecutorConfig } from "./executor-config.ts";
import { createHttpExecutor } from "./http-executor.ts";
import { createInertExecutor } from "./inert-executor.ts";

export type ExecutorFactory = (episodeId: string) => Executor;

export function createExecutorFactory(
  config: ExecutorConfig,
  deps: { clock?: () => number; fetch?: typeof fetch } = {},
): ExecutorFactory {
  switch (config.kind) {
    case "inert":
      return () =>
        createInertExecutor({
          clock: deps.clock,
          ackDelayMs: config.ack_delay_ms,
          receiptDelayMs: config.receipt_delay_ms,
          frame: { width: config.frame_width ?? 64, height: config.frame_height ?? 48 },
        });
    case "http": {
      const shared = createHttpExecutor({
        url: config.url,
        timeoutMs: config.timeout_ms,
        receiptTimeoutMs: config.receipt_timeout_ms,
        pollWaitMs: config.poll_wait_ms,
        submitAttempts: config.submit_attempts,
        receiptAttempts: config.receipt_attempts,
        retryDelayMs: config.retry_delay_ms,
        fetch: deps.fetch,
        clock: deps.clock,
      });
      return () => shared;
    }
    default: {
      const never: never = config;
      throw new Error(`unknown executor kind ${JSON.stringify(never)}`);
    }
  }
}
