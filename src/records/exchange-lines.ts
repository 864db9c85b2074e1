/**
 * The exchange record line (exchanges.jsonl, docs/records.md): one zod schema per
 * stage, the single source of truth for the writer (the verbs of exchange-verbs.ts
 * take exactly these fields) and for every reader (metrics, tracing, the `/ui`
 * timeline, the dataset export, `validate`, the `records` command).
 *
 * Each stage has two schemas from one declaration:
 *   `…FieldsSchema`  what the writer puts in a line now, besides the stamp (`v`, `at`),
 *                    `exchange`, `stage` and the spliced bodies;
 *   `…LineSchema`    a line as read back: lenient, since a line of an older format
 *                    version may lack a member written today (every member optional,
 *                    nested ones too, unknown members kept). Bodies and hub requests are `unknown` on
 *                    read: their images are blob references until resolved (read-records.ts).
 * Nothing is validated when written (the types are): the writer is the one producer.
 */
import { z } from "zod";
import { contextDecisionSchema } from "../context/decision-schema.ts";
import { protocolSchema } from "../hub/protocol.ts";
import { type HubRequest, hubResponseSchema } from "../hub/schema.ts";
import { exchangeCostSchema } from "../pricing/exchange-cost.ts";
import { upstreamAttemptSchema } from "../upstream/upstream-attempt.ts";
import { upstreamCancelSchema } from "./upstream-cancel.ts";

export const exchangeStageSchema = z.enum([
  "client_request",
  "after_context",
  "upstream_request",
  "upstream_response",
  "delivered",
  "status",
]);
export type ExchangeStage = z.infer<typeof exchangeStageSchema>;

/** The members every exchange line has, whatever its stage. */
const lineHead = {
  /** Absent on version 1 lines. */
  v: z.number().optional(),
  at: z.string().optional(),
  exchange: z.string(),
};

/** The line as read: the writer's fields (all optional for older lines), and the stage's spliced bodies. */
function lineSchema<Stage extends ExchangeStage, Fields extends z.ZodRawShape, Spliced extends z.ZodRawShape>(
  stage: Stage,
  fields: z.ZodObject<Fields>,
  spliced: Spliced,
) {
  return z.looseObject({ ...lineHead, stage: z.literal(stage), ...fields.partial().shape, ...spliced });
}

/** The client's request as received: `body` (JSON spliced in) or `body_text`; neither when omitted. */
export const clientRequestFieldsSchema = z.object({
  protocol: protocolSchema,
  /** The request path from /e/<episode> on, without a `key` query parameter (recorded-path.ts). */
  path: z.string(),
  /** Over the data directory's bound, the body is not recorded (docs/records.md, retention). */
  body_omitted: z.literal("records.max_bytes").optional(),
  /** The client's own session id on this request (docs/clients.md); absent when it sent none. */
  client_session: z.string().optional(),
});
export const clientRequestLineSchema = lineSchema("client_request", clientRequestFieldsSchema, {
  body: z.unknown().optional(),
  body_text: z.string().optional(),
});

/**
 * What the context policy decided (the one decision, body_budget's too); the hub request
 * after it only when it changed the request, and then not under body_budget, which
 * reduces the body as sent (the upstream_request line's): docs/records.md.
 */
export const identicalRequest = "identical to the translated request";
export const reducedAsSentUpstream = "as in the upstream request";
export const afterContextFieldsSchema = z.object({
  request: z.union([z.literal(identicalRequest), z.literal(reducedAsSentUpstream), z.custom<HubRequest>()]),
  /** The translated request, before the policy (only when the policy changed it). */
  translated: z.custom<HubRequest>().optional(),
  decision: contextDecisionSchema,
});
export const afterContextLineSchema = lineSchema(
  "after_context",
  afterContextFieldsSchema.extend({
    request: z.unknown(),
    translated: z.unknown(),
    decision: contextDecisionSchema.partial().loose(),
  }),
  {},
);

/** What the image conversion did (images/convert-request.ts ImageStats). */
export const imageStatsSchema = z.object({
  images: z.number(),
  converted: z.number(),
  cacheHits: z.number(),
  passedThrough: z.record(z.string(), z.number()),
  bytesBefore: z.number(),
  bytesAfter: z.number(),
  encodeMs: z.number(),
  leftOut: z.number(),
});

/** What body_budget did, as upstream_request lines written before 2026-12-05 hold it. */
const bodyBudgetRecordSchema = contextDecisionSchema.pick({
  body_budget: true,
  images_omitted: true,
  blocks_removed: true,
  reduced: true,
});

/** The Chat Completions body exactly as sent is spliced in as `body`. */
export const upstreamRequestFieldsSchema = z.object({
  images: imageStatsSchema,
  /** What the ingress accepted but does not forward. */
  ignored: z.array(z.string()),
});
export const upstreamRequestLineSchema = lineSchema(
  "upstream_request",
  upstreamRequestFieldsSchema.extend({
    images: imageStatsSchema.partial().loose(),
    /** Lines written before 2026-12-05, under body_budget: its decision (now in after_context). */
    context: bodyBudgetRecordSchema.partial().loose(),
  }),
  { body: z.unknown().optional() },
);

/** Every attempt, the raw answer of the last one, and the validated answer or why there is none. */
export const upstreamResponseFieldsSchema = z.object({
  attempts: z.array(upstreamAttemptSchema),
  /** The raw body of the successful attempt (SSE text); null when none was read. */
  raw: z.string().nullable(),
  validated: hubResponseSchema.optional(),
  error: z.string().optional(),
  /**
   * For an exchange cancelled before it had an answer (the client left, the episode was
   * cancelled, the sidecar shut down): where it was and why, beside its `error` message.
   * Added 2026-12-05: older lines say it only in `error` (upstream-cancel.ts reads both).
   */
  cancelled: upstreamCancelSchema.optional(),
  /**
   * What the exchange cost, from the usage of every billed attempt (docs/pricing.md); only
   * with a price table that lists the model. Added 2026-12-05: older lines have none.
   */
  cost: exchangeCostSchema.optional(),
});
export const upstreamResponseLineSchema = lineSchema(
  "upstream_response",
  upstreamResponseFieldsSchema.extend({
    attempts: z.array(upstreamAttemptSchema.partial().loose()),
    raw: z.unknown(),
    validated: hubResponseSchema.partial().loose(),
    cancelled: upstreamCancelSchema.partial().loose(),
    cost: exchangeCostSchema.loose(),
  }),
  {},
);

/** What was delivered: a JSON answer spliced in as `body`, an SSE stream as the string `body`. */
export const deliveredFieldsSchema = z.object({
  content_type: z.string(),
  /** Keepalive frames sent before the answer (src/exchange/keep-streaming-alive.ts); not part of `body`. */
  keepalives: z.number().int().optional(),
});
export const deliveredLineSchema = lineSchema("delivered", deliveredFieldsSchema, {
  body: z.unknown().optional(),
});

/** The exchange's end: delivered, failed (before delivery) or revoked (during it). */
export const statusFieldsSchema = z.discriminatedUnion("status", [
  z.object({
    status: z.literal("delivered"),
    /** The ledger batch of the answer's robot calls (named by the exchange), null without one. */
    batch: z.string().nullable(),
  }),
  z.object({
    status: z.literal("failed"),
    error: z.object({
      kind: z.string(),
      message: z.string(),
      param: z.string().nullable(),
      /** The HTTP status the client was answered with. */
      http_status: z.number(),
    }),
    episode_state: z.string(),
    /** A context failure (protected content over target): the decision reached. */
    context_decision: contextDecisionSchema.optional(),
    /** The head had gone out (kept alive): the error ended the stream in its in-stream form. */
    told_in_stream: z.literal(true).optional(),
    keepalives: z.number().int().optional(),
  }),
  z.object({
    status: z.literal("revoked"),
    reason: z.string(),
    /** Frames handed to the client before delivery failed. */
    frames_sent: z.number(),
    batch: z.string().nullable(),
  }),
]);
export const statusLineSchema = z.looseObject({
  ...lineHead,
  stage: z.literal("status"),
  status: z.enum(["delivered", "failed", "revoked"]),
  batch: z.string().nullable().optional(),
  error: z
    .looseObject({
      kind: z.string(),
      message: z.string(),
      param: z.string().nullable().optional(),
      http_status: z.number().optional(),
    })
    .optional(),
  episode_state: z.string().optional(),
  context_decision: contextDecisionSchema.partial().loose().optional(),
  reason: z.string().optional(),
  frames_sent: z.number().optional(),
  told_in_stream: z.literal(true).optional(),
  keepalives: z.number().int().optional(),
});

export type ClientRequestFields = z.infer<typeof clientRequestFieldsSchema>;
export type AfterContextFields = z.infer<typeof afterContextFieldsSchema>;
export type UpstreamRequestFields = z.infer<typeof upstreamRequestFieldsSchema>;
export type UpstreamResponseFields = z.infer<typeof upstreamResponseFieldsSchema>;
export type DeliveredFields = z.infer<typeof deliveredFieldsSchema>;
export type StatusFields = z.infer<typeof statusFieldsSchema>;

/** The fields each stage's writer gives, by stage. */
export type ExchangeStageFields = {
  client_request: ClientRequestFields;
  after_context: AfterContextFields;
  upstream_request: UpstreamRequestFields;
  upstream_response: UpstreamResponseFields;
  delivered: DeliveredFields;
  status: StatusFields;
};

/** One line as written (its fields, without stamp and spliced bodies): what observers are told. */
export type ExchangeLine = { [S in ExchangeStage]: { stage: S } & ExchangeStageFields[S] }[ExchangeStage];

export const exchangeLineSchemas = {
  client_request: clientRequestLineSchema,
  after_context: afterContextLineSchema,
  upstream_request: upstreamRequestLineSchema,
  upstream_response: upstreamResponseLineSchema,
  delivered: deliveredLineSchema,
  status: statusLineSchema,
} as const;

/** A stage's line as read back (read-records.ts `RecordedExchange.line`). */
export type ExchangeLineRead<S extends ExchangeStage> = z.infer<(typeof exchangeLineSchemas)[S]>;

/** A recorded value read as a stage's line; undefined when it is not one (another stage, a damaged line). */
export function readExchangeLine<S extends ExchangeStage>(
  stage: S,
  value: unknown,
): ExchangeLineRead<S> | undefined {
  const parsed = exchangeLineSchemas[stage].safeParse(value);
  return parsed.success ? (parsed.data as ExchangeLineRead<S>) : undefined;
}
