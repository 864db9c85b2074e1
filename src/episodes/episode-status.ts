/**
 * An episode's status as the control API answers it (GET /control/episodes/{id},
 * the list, cancel) and as episode.json holds it. The schema is the one source of
 * truth: `Episode.describe()` is typed by it, and readers (validate, tests) parse
 * with it instead of casting. Readers are lenient about keys added later.
 */
import { z } from "zod";
import { contextPolicySchema } from "../context/policy-schema.ts";
import { episodeCostSchema } from "../pricing/exchange-cost.ts";

const callStatusCountsSchema = z.record(z.string(), z.number());

export const episodeCountersSchema = z.object({
  delivered_exchanges: z.number(),
  failed_exchanges: z.number(),
  revoked_exchanges: z.number(),
  auxiliary_responses: z.number(),
  tool_calls_admitted: z.number(),
  tool_calls_refused: z.number(),
});
export type EpisodeCounters = z.infer<typeof episodeCountersSchema>;

/** What the MCP server saw: a CLI given a bad token silently runs without the tools. */
export const episodeMcpSchema = z.object({
  initialized: z.boolean(),
  tools_listed: z.boolean(),
  user_agent: z.string().optional(),
  sessions_opened: z.number(),
  sessions_closed: z.number(),
});
export type EpisodeMcp = z.infer<typeof episodeMcpSchema>;

const detectedClientSchema = z.object({ client: z.string(), version: z.string().nullable() });

export const clientIdentityStatusSchema = z.looseObject({
  expected: z.string().nullable(),
  pinned_version: z.string().nullable(),
  /** Absent in the status of an episode recorded before versions other than the pin were proven. */
  proven_versions: z.array(z.string()).readonly().nullable().optional(),
  model_user_agent: z.string().nullable(),
  model_client: detectedClientSchema.nullable(),
  mcp_client: detectedClientSchema.nullable(),
  /** The client seen is the expected one at a proven version (the pin or another in proven_versions). */
  pinned: z.boolean().nullable(),
  unpinned_reason: z.string().nullable(),
  require_pinned_client: z.boolean(),
  mcp_required: z.enum(["warn", "refuse"]),
  mcp_connected: z.boolean(),
  model_requests: z.number(),
  model_requests_without_mcp: z.number(),
  /** The client's own session ids (absent in an episode recorded before they were kept). */
  session_ids: z.array(z.string()).optional(),
  session_header: z.string().nullable().optional(),
  session_ids_beyond_limit: z.number().optional(),
  flags: z.array(z.string()),
});

export type ClientIdentityStatus = z.infer<typeof clientIdentityStatusSchema>;

export const ledgerSummarySchema = z.object({
  admission: z.enum(["open", "closed"]),
  interrupted: z.boolean(),
  batches: z.number(),
  calls: z.number(),
  counts: callStatusCountsSchema,
  /**
   * The most recent claimed calls (at most 100), in claim order; every claim is in the
   * episode's ledger.jsonl. In a status written before `claimedTotal` existed: every claimed call.
   */
  claimed: z.array(z.string()).readonly(),
  /** How many calls were ever claimed; absent in statuses written before (2026-12-05): `claimed`'s length. */
  claimedTotal: z.number().optional(),
  unfinished: z.array(z.string()).readonly(),
  uncertain: z.array(z.string()).readonly(),
  /** Calls waiting for an operator's decision (docs/approvals.md); absent in descriptions written before. */
  awaitingApproval: z.array(z.string()).readonly().default([]),
  refusedCallbacks: z.number(),
});

export const episodeStateSchema = z.enum(["running", "finished", "failed", "interrupted"]);
export const failureReasonSchema = z.enum([
  "provider_error",
  "max_turns",
  "cancelled",
  "interrupted",
  "deadline",
]);

export const episodeStatusSchema = z.looseObject({
  id: z.string(),
  created_at: z.string(),
  state: episodeStateSchema,
  failure: z.object({ reason: failureReasonSchema, message: z.string() }).nullable(),
  result: z.unknown(),
  model: z.string(),
  client: z.string().nullable(),
  max_turns: z.number(),
  context_policy: contextPolicySchema,
  manifest: z.object({ server: z.string(), tools: z.array(z.string()), finish_tool: z.string() }),
  counters: episodeCountersSchema,
  mcp: episodeMcpSchema,
  client_identity: clientIdentityStatusSchema,
  ledger: ledgerSummarySchema,
  records_dir: z.string(),
  /**
   * The sum of the exchanges' costs (upstream.prices, docs/pricing.md); null while none
   * has one (no price table, or none for the model); absent in statuses written before.
   */
  cost: episodeCostSchema.nullable().optional(),
  /** Only on an episode restored after a restart: uncertain calls, torn tails, the frozen marker. */
  restart: z.record(z.string(), z.unknown()).optional(),
  /** When records shipping is configured. */
  shipping: z.unknown().optional(),
});
export type EpisodeStatus = z.infer<typeof episodeStatusSchema>;

/** GET /control/episodes: the status of every episode, restored ones included. */
export const episodeListSchema = z.object({ episodes: z.array(episodeStatusSchema) });
export type EpisodeList = z.infer<typeof episodeListSchema>;

/** POST /control/episodes/{id}/cancel: the status after cancelling, and the admitted calls the drain left unfinished. */
export const cancelledEpisodeSchema = episodeStatusSchema.extend({
  drain: z.object({ unfinished: z.array(z.string()) }),
});
export type CancelledEpisode = z.infer<typeof cancelledEpisodeSchema>;
