/**
 * What observers read from record lines, as lenient zod schemas listing only the
 * fields they use (the records format belongs to the records module; a line that
 * does not match is simply not counted, never an error in the exchange).
 */
import { z } from "zod";

export const clientRequestSchema = z.object({ protocol: z.string(), path: z.string().optional() });

/** What a context policy left out: sliding_window's in after_context, body_budget's in upstream_request. */
const reductionSchema = z.object({
  images_omitted: z.array(z.unknown()),
  blocks_removed: z.array(z.unknown()),
});

export const afterContextSchema = z.object({
  decision: reductionSchema.extend({ policy: z.string(), reduced: z.boolean() }).optional(),
});

export const upstreamRequestSchema = z.object({
  images: z
    .object({ images: z.number(), bytesBefore: z.number(), bytesAfter: z.number(), converted: z.number() })
    .optional(),
  context: reductionSchema.optional(),
});

export const upstreamAttemptSchema = z.object({
  attempt: z.number(),
  started_at: z.string(),
  ms: z.number(),
  /** Waited for its turn in the shared upstream budget (absent: went at once). */
  queue_ms: z.number().optional(),
  first_byte_ms: z.number().optional(),
  status: z.number().optional(),
  /** How the attempt ended and, when it failed, its row of docs/upstream-errors.md. */
  ended: z.string().optional(),
  cause: z.string().optional(),
  classification: z.string().optional(),
  provider_code: z.string().optional(),
  error: z.string().optional(),
  retry_in_ms: z.number().optional(),
});
export type ObservedAttempt = z.infer<typeof upstreamAttemptSchema>;

export const upstreamResponseSchema = z.object({
  attempts: z.array(upstreamAttemptSchema).default([]),
  error: z.string().optional(),
  validated: z
    .object({
      finishReason: z.string().optional(),
      usage: z.object({ inputTokens: z.number(), outputTokens: z.number() }).optional(),
      toolCalls: z.array(z.object({ id: z.string(), name: z.string() })).default([]),
    })
    .optional(),
});

export const exchangeStatusSchema = z.object({
  status: z.enum(["delivered", "failed", "revoked"]),
  error: z.object({ kind: z.string(), message: z.string() }).optional(),
  batch: z.string().nullable().optional(),
});

/** A ledger journal line: its type and the call it concerns (when it concerns one). */
export const ledgerLineSchema = z.object({
  type: z.string(),
  at: z.number().optional(),
  batchId: z.string().optional(),
  exchangeId: z.string().optional(),
  callId: z.string().optional(),
  tool: z.string().optional(),
  code: z.string().optional(),
  reason: z.string().optional(),
  calls: z.array(z.object({ id: z.string(), tool: z.string() })).optional(),
  uncertain: z.array(z.string()).optional(),
});
export type LedgerLine = z.infer<typeof ledgerLineSchema>;

export const auxiliarySchema = z.object({
  path: z.string(),
  status: z.number(),
  protocol: z.string().optional(),
  operation: z.string().optional(),
});

/** "2xx", "4xx", "5xx" for an HTTP status, "error" when the attempt got none (connection, timeout). */
export function statusClass(status: number | undefined): string {
  return status === undefined ? "error" : `${Math.floor(status / 100)}xx`;
}
