/**
 * The sidecar's settings: the one source of truth for every configurable value.
 * Sources (file < environment < flags) are merged by load-config.ts and then
 * parsed here, so every error names the key at fault. Secrets are not settings:
 * they come from the environment only (see secrets.ts) and never pass through
 * this schema, so they cannot leak through a config dump.
 */
import { z } from "zod";
import { contextPolicySchema } from "../context/policy-schema.ts";
import { defaultExecutorConfig, executorConfigSchema } from "../executor/executor-config.ts";
import { webpSettingsSchema } from "../images/settings.ts";
import { sizeLimitsSchema } from "../images/size-guard.ts";
import { defaultApprovalTimeoutMs } from "../ledger/episode-ledger.ts";
import { modelDeclarationSchema } from "../models/model-capabilities.ts";
import { createModelCatalog } from "../models/model-catalog.ts";
import { priceTableSchema } from "../pricing/price-table.ts";
import { shippingSchema } from "./shipping-config.ts";
import { upstreamProfileChoiceSchema } from "./upstream-profile.ts";

/** Default of mcp_progress_interval_ms (src/mcp/tool-call-progress.ts). */
export const defaultProgressIntervalMs = 5_000;

/** A key that was replaced: naming it is refused with `message` (what to use instead), not as an unknown key. */
const removedKey = (message: string) => z.undefined({ error: message }).optional();

/** A key the model table replaced. */
const retiredKey = (key: string) =>
  removedKey(`replaced by the model table: set upstream.models.<model id>.${key} instead (docs/models.md)`);

/** Retries of transient upstream failures (docs/upstream-errors.md says which are transient). */
export const retrySchema = z
  .object({
    /**
     * The retry time budget: retries start only within this long after the exchange's first
     * failed attempt (the exchange deadline bounds it too). Long enough for a per-minute
     * quota (Model Studio's RPM/TPM limits) to clear.
     */
    max_wait_ms: z.number().int().positive().default(120_000),
    /** Optional cap on attempts in total, the first included (1 = no retry); absent = the time budget alone. */
    max_attempts: z.number().int().min(1).max(1000).optional(),
    /** The shortest wait before a retry, and the base of the exponential backoff. */
    initial_backoff_ms: z.number().int().min(0).default(1000),
    /** The longest jittered wait before a retry (a provider's Retry-After may ask for more). */
    max_backoff_ms: z.number().int().min(0).default(30_000),
    retry_statuses: removedKey(
      "no longer a setting: the classification table decides what is retried (docs/upstream-errors.md)",
    ),
    retry_network_errors: removedKey(
      "no longer a setting: connection failures, idle timeouts and cut streams are always retried within upstream.retry.max_wait_ms",
    ),
  })
  .strict()
  .superRefine((retry, ctx) => {
    if (retry.initial_backoff_ms > retry.max_backoff_ms)
      ctx.addIssue({
        code: "custom",
        path: ["initial_backoff_ms"],
        message: `must not exceed upstream.retry.max_backoff_ms (${retry.max_backoff_ms})`,
      });
  });

/**
 * The upstream budget all episodes of this sidecar share (src/upstream/upstream-budget.ts,
 * docs/upstream-budget.md). Attempts over it wait in a fair queue (episodes in turn) instead
 * of failing; a throttle answer (429) lowers the pace for every episode, answers raise it back.
 * In a fleet, each sidecar sets its share of the provider key's quota (docs/fleet.md).
 */
export const upstreamBudgetSchema = z
  .object({
    /** Upstream attempts in flight at once, over all episodes. */
    max_concurrent: z.number().int().min(1).max(1024).default(8),
    /**
     * Requests per minute sent upstream, paced evenly (one every 60/N s; the provider
     * enforces its per-minute limits per second too). Absent = not limited.
     */
    requests_per_minute: z.number().positive().optional(),
    /**
     * Input tokens per minute sent upstream, estimated from the request (text: JSON bytes / 4;
     * an image: 1,200, its patches rather than its base64; src/upstream/estimate-input-tokens.ts), paced
     * with a burst of one second's worth. A request larger than that still goes, alone. Absent = not limited.
     */
    tokens_per_minute: z.number().int().positive().optional(),
  })
  .strict();

export const upstreamSchema = z
  .object({
    /** Chat API root, e.g. https://…/compatible-mode/v1 ; absent = the embedded scripted (demo) upstream. */
    url: z.url().optional(),
    /**
     * How the embedded scripted upstream behaves as a service (docs/upstream-profiles.md):
     * `instant` (default) or `loaded` (slow answers, throttle and 5xx bursts, a shared key
     * quota), or `{base, …fields}`. Only for the scripted upstream: refused with `url`.
     */
    scripted_profile: upstreamProfileChoiceSchema.optional(),
    /**
     * The default episodes' model. It must be in the built-in table (src/models/builtin-models.ts,
     * docs/models.md) or declared under `models`; a thinking-only model or one without function
     * calling is refused.
     */
    model: z.string().min(1).default("qwen3-vl-plus"),
    /**
     * Model capabilities by model id (src/models/model-capabilities.ts): for a built-in model the
     * fields to change (e.g. `max_output_tokens` for a region with a smaller limit), for any other
     * model every field. They set the `max_tokens` clamp (a larger client value is lowered and the
     * change recorded), whether images may go upstream, and what clients are told.
     */
    models: z.record(z.string().min(1), modelDeclarationSchema).default({}),
    /**
     * The operator's prices per million tokens, by model id, in one named currency
     * (src/pricing/price-table.ts, docs/pricing.md): each exchange's cost is recorded, summed
     * per episode, counted in metrics and shown on /ui. Absent = no cost anywhere; a model
     * it does not list has none (said once in the log).
     */
    prices: priceTableSchema.optional(),
    parallel_tool_calls: z.boolean().default(true),
    image_input: retiredKey("image_input"),
    max_output_tokens: retiredKey("max_output_tokens"),
    /**
     * Largest upstream answer read, in bytes (the whole answer is buffered before delivery):
     * over it the exchange is an upstream fault (upstream_invalid), nothing delivered.
     */
    max_response_bytes: z
      .number()
      .int()
      .positive()
      .default(32 * 1024 * 1024),
    /**
     * An attempt that receives no byte from the upstream (the response head included) for this
     * long is cut and counts as a transient failure. A slow answer that keeps streaming is
     * never cut before upstream.deadline_ms.
     */
    idle_timeout_ms: z.number().int().positive().default(90_000),
    /**
     * The whole exchange with the upstream — queue waits, attempts and backoff together —
     * ends by this long after it began.
     */
    deadline_ms: z.number().int().positive().default(600_000),
    timeout_ms: removedKey(
      "no longer a setting: use upstream.idle_timeout_ms (no byte from the upstream for that long cuts an attempt) and upstream.deadline_ms (bounds the whole exchange)",
    ),
    retry: retrySchema.default(retrySchema.parse({})),
    budget: upstreamBudgetSchema.default(upstreamBudgetSchema.parse({})),
  })
  .strict()
  .refine((upstream) => upstream.url === undefined || upstream.scripted_profile === undefined, {
    message: "a profile plays the embedded scripted upstream; it has none when upstream.url is set",
    path: ["scripted_profile"],
  })
  .superRefine((upstream, ctx) => {
    const catalog = createModelCatalog(upstream.models);
    for (const id of Object.keys(upstream.models)) {
      const declared = catalog.resolve(id);
      if (!declared.ok) ctx.addIssue({ code: "custom", path: ["models", id], message: declared.problem });
    }
    const chosen = catalog.resolve(upstream.model);
    if (!chosen.ok && !Object.hasOwn(upstream.models, upstream.model))
      ctx.addIssue({ code: "custom", path: ["model"], message: chosen.problem });
    const over = (path: string[], value: number, what: string) => {
      if (value > upstream.deadline_ms)
        ctx.addIssue({
          code: "custom",
          path,
          message: `${what} (${value} ms) must not exceed upstream.deadline_ms (${upstream.deadline_ms} ms)`,
        });
    };
    over(["idle_timeout_ms"], upstream.idle_timeout_ms, "the idle timeout");
    over(["retry", "max_wait_ms"], upstream.retry.max_wait_ms, "the retry budget");
    over(["retry", "max_backoff_ms"], upstream.retry.max_backoff_ms, "the longest backoff");
  });

export const configSchema = z
  .object({
    /** HOST:PORT to listen on. */
    listen: z
      .string()
      .regex(/^[^:\s]+:\d{1,5}$/, "expected HOST:PORT, e.g. 127.0.0.1:8787")
      .default("127.0.0.1:8787"),
    /** Where episodes keep their records. */
    data_dir: z.string().min(1).default("./ura-data"),
    log_level: z.enum(["debug", "info", "warn", "error"]).default("info"),
    /**
     * Largest client request body accepted, in bytes. Over it: a final 400 in the ingress
     * protocol's envelope (recorded in the episode's auxiliary.jsonl); 413 on control and MCP.
     * Every client resends its whole history, so this bounds an episode's length: the default
     * holds a 200-turn 640×480 camera history (~165 MB; docs/long-sessions.md, "Body limit").
     */
    body_limit_bytes: z
      .number()
      .int()
      .positive()
      .default(256 * 1024 * 1024),
    /**
     * Limits on client connections (src/server/request-timeouts.ts, docs/server-limits.md).
     * A request head must be complete within about 10 s: that bound is Bun's own and not
     * configurable. None of these cuts a wait on the upstream or on the robot.
     */
    server: z
      .object({
        /**
         * Seconds from the end of a request's head to its last body byte (a deadline: bytes
         * trickling in do not extend it). Over it: a final 400 in the route's envelope, the
         * connection closed, the refusal recorded. On loopback 256 MiB arrive in one to two seconds.
         */
        body_timeout_seconds: z.number().int().min(1).max(3600).default(60),
        /**
         * Seconds a connection may go without a byte written while answering, and an idle
         * kept-alive connection between requests. Bun counts them in 4 s steps (a connection
         * is closed between N−4 and N s, N rounded up to a multiple of 4) and allows at most 255.
         */
        idle_timeout_seconds: z.number().int().min(8).max(255).default(60),
        /**
         * Requests being received, worked on or answered at once, each holding a connection
         * (an MCP session's event stream counts while it is open). Beyond it a request gets a
         * retryable 503 in its route's envelope before its body is read; /health/* always answers.
         */
        max_requests_in_flight: z.number().int().min(1).default(512),
        /**
         * Compute the SHA-256 of a request body's long strings (a camera history's frames, every
         * turn) in a worker thread while the body arrives, rather than on the main thread. Takes
         * that work off the thread that serves every exchange and lowers the peak memory, at a
         * few percent more CPU in all and a hand-over per chunk: worth it where a second core is
         * idle while bodies arrive, not on a machine whose cores are all busy (decision 0018).
         */
        hash_worker: z.boolean().default(false),
      })
      .strict()
      .default({
        body_timeout_seconds: 60,
        idle_timeout_seconds: 60,
        max_requests_in_flight: 512,
        hash_worker: false,
      }),
    /**
     * Bytes of model request bodies (those of 1 MiB or more) processed at once, for all
     * episodes together: a received request that would pass it waits until earlier ones are
     * answered. A camera history costs a few times its size while it is processed, so this
     * bounds the sidecar's memory however many episodes send at once (docs/long-sessions.md,
     * "Memory"). One body larger than this is processed alone.
     */
    body_bytes_in_flight: z
      .number()
      .int()
      .positive()
      .default(64 * 1024 * 1024),
    upstream: upstreamSchema.default(upstreamSchema.parse({})),
    records: z
      .object({
        /**
         * fdatasync record lines where a promise depends on them: a claim before its call
         * reaches the executor, an exchange's records up to the upstream answer before the
         * answer is delivered (group commit: concurrent episodes share one round). Off, the
         * records survive kill -9 but not a power cut (README "Guarantees").
         */
        fsync: z.boolean().default(true),
        /**
         * Upper bound on the data directory's bytes (records and image blobs); over it new
         * model exchanges are refused with a final error naming the bound, never silently
         * dropped (src/records/data-dir-budget.ts). Absent = no bound.
         */
        max_bytes: z.number().int().positive().optional(),
      })
      .strict()
      .default({ fsync: true }),
    images: z
      .object({
        webp: webpSettingsSchema.default(webpSettingsSchema.parse({})),
        /**
         * Image conversion workers (Bun Workers); absent = the core count minus one, at least
         * one; 0 = convert on the event loop (a large frame then stalls every episode).
         */
        workers: z.number().int().min(0).max(64).optional(),
        /**
         * Bytes of converted WebP kept in memory for all episodes together, with the base64
         * text of each one sent (least recently used first out; 0 = no cache): a resent
         * history is then not converted again.
         */
        cache_bytes: z
          .number()
          .int()
          .nonnegative()
          .default(256 * 1024 * 1024),
        /** Provider limits checked before sending (Model Studio's observed limits by default). */
        limits: sizeLimitsSchema.default(sizeLimitsSchema.parse({})),
      })
      .strict()
      .default({
        webp: webpSettingsSchema.parse({}),
        cache_bytes: 256 * 1024 * 1024,
        limits: sizeLimitsSchema.parse({}),
      }),
    /** Context policy of episodes that do not choose one. */
    context: contextPolicySchema.default(contextPolicySchema.parse({ policy: "identity" })),
    delivery: z
      .object({
        /** How long a callback for a call still being delivered waits for the delivery outcome. */
        wait_ms: z.number().int().positive().default(15_000),
        /** How long a call waits for the previous call of its batch to be acknowledged. */
        previous_ack_wait_ms: z.number().int().positive().default(60_000),
      })
      .strict()
      .default({ wait_ms: 15_000, previous_ack_wait_ms: 60_000 }),
    shutdown: z
      .object({ drain_deadline_ms: z.number().int().positive().default(10_000) })
      .strict()
      .default({ drain_deadline_ms: 10_000 }),
    /**
     * Where admitted tool calls run: the embedded inert executor (default) or a controller
     * over HTTP, with its timeouts and retry settings (src/executor/executor-config.ts).
     */
    executor: executorConfigSchema.default(defaultExecutorConfig),
    /**
     * A model request from an episode whose client never completed MCP initialize and
     * tools/list: `warn` logs it and flags the episode status; `refuse` answers 400
     * from the episode's second model request on (src/episodes/client-identity.ts).
     */
    mcp_required: z.enum(["warn", "refuse"]).default("warn"),
    /**
     * Between two MCP progress notifications of a held tool call whose client sent a
     * progress token (src/mcp/tool-call-progress.ts); 0 = only when the call changes state.
     * Well under every client's idle limit that progress resets (docs/clients.md).
     */
    mcp_progress_interval_ms: z.number().int().min(0).max(60_000).default(defaultProgressIntervalMs),
    /**
     * How long a tool call whose manifest policy asks for approval waits for an operator's
     * decision (/ui or the control API) before it is rejected unrun (docs/approvals.md).
     * Client kits add it to the client's tool-call timeout for a manifest that asks.
     */
    approval_timeout_ms: z.number().int().positive().default(defaultApprovalTimeoutMs),
    /**
     * Ship every ended episode's records and image blobs to an S3-compatible bucket
     * (src/config/shipping-config.ts); absent = off. Credentials: AWS_* environment variables.
     */
    shipping: shippingSchema.optional(),
    /** Create one episode at start-up (the one-CLI case, and `make run`). */
    default_episode: z.boolean().default(false),
    /**
     * A streaming client kept waiting while its exchange waits on the upstream (queue,
     * backoff, a slow answer): after `head_after_ms` the response head and bytes its parser
     * ignores go out, then every `every_ms` until the answer (src/exchange/keep-streaming-alive.ts;
     * each client's limits in docs/clients.md). An `every_ms` at or over the server's own idle
     * cut (server.idle_timeout_seconds less Bun's 4 s step) is lowered under it.
     */
    stream_keepalive: z
      .object({
        enabled: z.boolean().default(true),
        head_after_ms: z.number().int().min(0).max(30_000).default(2_000),
        every_ms: z.number().int().min(1_000).max(60_000).default(10_000),
      })
      .strict()
      .default({ enabled: true, head_after_ms: 2_000, every_ms: 10_000 }),
  })
  .strict();

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
export type RetryPolicy = z.infer<typeof retrySchema>;
export type UpstreamBudgetConfig = z.infer<typeof upstreamBudgetSchema>;
