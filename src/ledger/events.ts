/**
 * The ledger journal: one event per state transition, one JSON line each. The
 * journal is what a restarted sidecar replays (`replayJournal`) and what the
 * records keep about tool calls, so it is append-only and self-describing.
 * `at` is milliseconds since the epoch from the injected clock. Replaying it must give the
 * live state exactly, so a restart never runs uncertain work again (docs/design.md §5).
 */
import { z } from "zod";

const id = z.string().min(1);
const at = z.number();

/** One tool call of a model response, as registered. */
export const ledgerCallInputSchema = z.object({
  /** The model's call id, exactly as delivered to the client. */
  id,
  /** The name the model used, e.g. `mcp__ura__observe`. */
  modelName: id,
  /** The manifest tool name, e.g. `observe`. */
  tool: id,
  /** The parsed JSON arguments the model produced. */
  args: z.record(z.string(), z.unknown()),
});

/**
 * The tool calls of one validated model response, registered just before it is sent.
 * A batch is named by the exchange that delivers it (`ex_NNNN`). Journals written
 * before also carried that id a second time as `exchangeId`; parsing drops it.
 */
export const ledgerBatchSchema = z.object({
  batchId: id,
  calls: z.array(ledgerCallInputSchema),
});
export type LedgerBatchInput = z.infer<typeof ledgerBatchSchema>;

/** Why a callback was refused; `reason` carries the sentence for the client. */
export const refusalCodeSchema = z.enum([
  "no_match",
  "tool_differs",
  "arguments_differ",
  "already_claimed",
  "revoked",
  "skipped",
  "admission_closed",
  "delivery_timeout",
]);
export type RefusalCode = z.infer<typeof refusalCodeSchema>;

/**
 * Who decided a call that awaited approval: an operator (`ui`, `api`), or nobody —
 * no decision in time (`timeout`), the episode closed (`closed`) or restarted
 * (`restart`), or the client withdrew the call (`client`: it cancelled it or its
 * session closed), so no answer could reach the model any more.
 */
export const approvalDeciderSchema = z.enum(["ui", "api", "timeout", "closed", "restart", "client"]);
export type ApprovalDecider = z.infer<typeof approvalDeciderSchema>;
export type StopReason = z.infer<typeof stopReasonSchema>;

/** Why the sidecar asked the executor to stop an episode's jobs (docs/executor-api.md). */
export const stopReasonSchema = z.enum(["cancelled", "abandoned", "deadline", "drain_overrun"]);

/** SHA-256 (hex) of a call's canonical arguments: what an approval decision is bound to. */
const argsSha256 = z.string().regex(/^[0-9a-f]{64}$/);

export const ledgerEventSchema = z.discriminatedUnion("type", [
  ledgerBatchSchema.extend({ type: z.literal("registered"), at }),
  z.object({ type: z.literal("delivered"), at, batchId: id }),
  z.object({ type: z.literal("revoked"), at, batchId: id, reason: z.string() }),
  z.object({
    type: z.literal("claimed"),
    at,
    callId: id,
    /** Which identity matched: the client's call id, or tool name + canonical arguments. */
    by: z.enum(["call_id", "name_args"]),
  }),
  z.object({
    type: z.literal("refused"),
    at,
    tool: z.string(),
    /** Canonical arguments of the refused callback. */
    arguments: z.string(),
    /** The call id the callback claimed to be, if any. */
    callId: z.string().optional(),
    code: refusalCodeSchema,
    reason: z.string(),
  }),
  /** A delivered call that can no longer be claimed: a later call of its batch went ahead without it. */
  z.object({ type: z.literal("skipped"), at, callId: id, reason: z.string() }),
  /** A claimed call waits for a person's decision before anything reaches the executor. */
  z.object({
    type: z.literal("approval_requested"),
    at,
    callId: id,
    argsSha256,
    /** The manifest rule that asked for approval. */
    rule: z.string(),
    /** When it is rejected if nobody decided (ms since the epoch). */
    expiresAt: z.number(),
  }),
  z.object({
    type: z.literal("approved"),
    at,
    callId: id,
    argsSha256,
    by: z.enum(["ui", "api"]),
  }),
  /** The call never runs: an operator said no, nobody decided in time, or the episode closed or restarted. */
  z.object({
    type: z.literal("rejected"),
    at,
    callId: id,
    argsSha256,
    by: approvalDeciderSchema,
    reason: z.string(),
  }),
  /** A claimed call over its tool's rate limit: it never runs. */
  z.object({
    type: z.literal("rate_limited"),
    at,
    callId: id,
    limit: z.enum(["per_minute", "min_interval_ms"]),
    reason: z.string(),
  }),
  z.object({ type: z.literal("submitted"), at, callId: id }),
  /**
   * The sidecar asks the executor to stop a job in flight (its episode was abandoned),
   * journaled before the request; the call's state does not change: its receipt or
   * failure still ends it.
   */
  z.object({ type: z.literal("stop_requested"), at, callId: id, jobId: id, reason: stopReasonSchema }),
  /** The executor's answer to that stop (`status` null: no answer). */
  z.object({
    type: z.literal("stop_answered"),
    at,
    callId: id,
    jobId: id,
    reason: stopReasonSchema,
    status: z.number().nullable(),
    stopped: z.boolean(),
    detail: z.string(),
  }),
  z.object({ type: z.literal("acknowledged"), at, callId: id, jobId: z.string() }),
  z.object({ type: z.literal("receipt"), at, callId: id, result: z.unknown() }),
  z.object({ type: z.literal("failed"), at, callId: id, reason: z.string() }),
  z.object({ type: z.literal("admission_closed"), at, reason: z.string() }),
  /** Written by a restarted sidecar: nothing from before can be claimed; these calls may or may not have run. */
  z.object({ type: z.literal("interrupted"), at, uncertain: z.array(id) }),
]);
export type LedgerEvent = z.infer<typeof ledgerEventSchema>;

/** An event as the pure state machine produces it; the adapter stamps `at`. */
export type LedgerEventBody = LedgerEvent extends infer E
  ? E extends LedgerEvent
    ? Omit<E, "at">
    : never
  : never;
