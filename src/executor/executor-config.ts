/**
 * Which executor episodes use (config key `executor`): the embedded inert one
 * (default) or a robot controller over HTTP (docs/executor-api.md).
 */
import { z } from "zod";

export const inertExecutorConfigSchema = z
  .object({
    kind: z.literal("inert"),
    /** Delay before a job is acknowledged (makes batch serialisation observable in tests). */
    ack_delay_ms: z.number().int().min(0).default(0),
    /** Delay between acknowledgement and receipt. */
    receipt_delay_ms: z.number().int().min(0).default(0),
    /**
     * Size of the frames `observe` returns (default 64 × 48). A camera-sized frame
     * (1280 × 720) costs a Qwen-VL model ~1,200 prompt tokens, as a real robot's does.
     */
    frame_width: z.number().int().min(1).max(4096).optional(),
    frame_height: z.number().int().min(1).max(4096).optional(),
  })
  .strict();

export const httpExecutorConfigSchema = z
  .object({
    kind: z.literal("http"),
    /** Controller root, e.g. http://127.0.0.1:9000 (POST {url}/jobs …). */
    url: z.url(),
    /** Limit per HTTP request (submit, and each receipt poll beyond its long-poll wait). */
    timeout_ms: z.number().int().positive().default(10_000),
    /** How long a receipt may take in total before the call is reported failed. */
    receipt_timeout_ms: z.number().int().positive().default(600_000),
    /** Long-poll wait asked of the controller per receipt request. */
    poll_wait_ms: z.number().int().min(0).default(20_000),
    /**
     * Submissions in total for one job when the controller is unreachable or answers
     * 5xx, always with the same idempotency key (so a retry can never start it twice).
     */
    submit_attempts: z.number().int().positive().default(3),
    /**
     * Receipt polls that may fail in a row (unreachable or 5xx) before the call is
     * reported failed; a "not finished yet" answer resets the count.
     */
    receipt_attempts: z.number().int().positive().default(5),
    /**
     * Back-off base: after the n-th failed submit or receipt poll in a row the sidecar
     * waits n × this long; with `poll_wait_ms: 0` it is also the pause between polls.
     */
    retry_delay_ms: z.number().int().min(0).default(250),
  })
  .strict();

export const executorConfigSchema = z.discriminatedUnion("kind", [
  inertExecutorConfigSchema,
  httpExecutorConfigSchema,
]);
export type ExecutorConfig = z.infer<typeof executorConfigSchema>;
export const defaultExecutorConfig: ExecutorConfig = { kind: "inert", ack_delay_ms: 0, receipt_delay_ms: 0 };
