/**
 * One upstream attempt of an exchange, as the upstream client measures it and as
 * the exchange's `upstream_response` record line holds it (docs/records.md,
 * docs/upstream-errors.md): metrics, traces and the `/ui` timeline read attempts
 * back by this schema.
 */
import { z } from "zod";
import { hubUsageSchema } from "../hub/schema.ts";

/** How an attempt ended. */
export const attemptEndSchema = z.enum([
  /** A complete, valid answer. */
  "answered",
  /** An HTTP error answer (status ≥ 400). */
  "http_error",
  /** Nothing from the upstream for upstream.idle_timeout_ms: cut. */
  "idle_timeout",
  /** Cut by the exchange's deadline (upstream.deadline_ms). */
  "deadline",
  /** The connection failed or broke off (refused, reset …). */
  "connection",
  /** The stream ended without its [DONE]. */
  "stream_cut",
  /** The stream carried an error event instead of the answer. */
  "stream_error",
  /** The exchange was cancelled (episode cancelled, client gone, shutdown) during the attempt. */
  "cancelled",
  /** An answer that must not be delivered (invalid arguments, undeclared tool, over max_response_bytes …). */
  "invalid_answer",
]);
export type AttemptEnd = z.infer<typeof attemptEndSchema>;

/** Where a cancelled exchange was (its `upstream_response` line's `cancelled.at`). */
export const cancelledAtSchema = z.enum([
  /** An attempt was in flight (its `ended` is `cancelled`). */
  "attempt",
  /** Waiting before a retry (the last attempt failed and has `retry_in_ms`). */
  "backoff",
  /** Waiting in the shared upstream queue for a retry's turn. */
  "queue",
]);
export type CancelledAt = z.infer<typeof cancelledAtSchema>;

export const upstreamAttemptSchema = z.object({
  attempt: z.number(),
  /** When the attempt was sent (after its wait in the queue). */
  started_at: z.string(),
  /** From sending the request to the attempt's end. */
  ms: z.number(),
  /** Waited in the shared upstream queue before this attempt was sent (absent: went at once). */
  queue_ms: z.number().optional(),
  /** From sending the request to the response headers. */
  first_byte_ms: z.number().optional(),
  status: z.number().optional(),
  ended: attemptEndSchema,
  /** For `idle_timeout`: the silence that cut the attempt. */
  idle_ms: z.number().optional(),
  /** The provider's error code (or type) as sent. */
  provider_code: z.string().optional(),
  /** For a failed attempt: whether a later attempt could succeed (docs/upstream-errors.md). */
  classification: z.enum(["transient", "final"]).optional(),
  /** For a failed attempt: the cause's row in docs/upstream-errors.md. */
  cause: z.string().optional(),
  error: z.string().optional(),
  /** The wait before the next attempt. */
  retry_in_ms: z.number().optional(),
  /**
   * The usage the upstream reported on this attempt (its final chunk), which is what it
   * bills: an answered attempt's, and one whose answer was refused; absent when it sent none.
   */
  usage: hubUsageSchema.optional(),
});
export type UpstreamAttempt = z.infer<typeof upstreamAttemptSchema>;
