/**
 * How the scripted Qwen behaves as a service, as data: how long it takes to answer
 * (time to the response head, to the first frame, a token rate for the stream), the
 * failure bursts a loaded Model Studio endpoint shows (429 per-minute quota answers
 * with the provider's exact bodies, 5xx, connections reset mid-stream), and a quota
 * it enforces itself, shared by every request it serves (so several episodes on one
 * key throttle each other as they do on the real endpoint).
 *
 * `instant` is the stand-in every test used so far: it answers at once and never
 * refuses. `loaded` plays a busy endpoint a person can watch (`make run` with
 * `--upstream-profile loaded`). Tests pass their own profile: any field of a named
 * one can be overridden (resolveUpstreamProfile).
 */
import { z } from "zod";

/** What a request inside a burst window gets instead of its answer. */
export const burstKindSchema = z.enum([
  /** 429, Model Studio's tokens-per-minute answer (Throttling.AllocationQuota, `insufficient_quota`). */
  "allocation_quota",
  /** 429, Model Studio's requests-per-minute answer (Throttling.RateQuota, `limit_requests`). */
  "rate_quota",
  /** 500, an internal error. */
  "server_error",
  /** 503, the service unavailable. */
  "service_unavailable",
  /** The answer starts streaming, then the connection drops halfway (no finish, no [DONE]). */
  "reset_mid_stream",
]);
export type BurstKind = z.infer<typeof burstKindSchema>;

export const burstSchema = z
  .object({
    kind: burstKindSchema,
    /** Start of the first window, ms after the upstream started (or was reset). */
    from_ms: z.number().int().nonnegative().default(0),
    /** Length of each window. */
    for_ms: z.number().int().positive(),
    /** Windows repeat with this period (from window start to window start); absent = one window. */
    every_ms: z.number().int().positive().optional(),
    /** Share of the requests inside a window that get the failure (seeded, so runs repeat). */
    share: z.number().min(0).max(1).default(1),
  })
  .strict()
  .refine((b) => b.every_ms === undefined || b.every_ms > b.for_ms, {
    message: "every_ms must be longer than for_ms (the windows would overlap)",
    path: ["every_ms"],
  });
export type Burst = z.infer<typeof burstSchema>;

export const quotaSchema = z
  .object({
    /** Requests answered at once; one more gets 429 rate_quota. */
    concurrent: z.number().int().positive().optional(),
    /** Requests admitted in any 60 s; over it: 429 rate_quota. */
    requests_per_minute: z.number().int().positive().optional(),
    /** Tokens (prompt estimate + answer) admitted in any 60 s; over it: 429 allocation_quota. */
    tokens_per_minute: z.number().int().positive().optional(),
    /** Enforce the per-minute limits per second too (RPM/60, TPM/60 in any 1 s), as Model Studio does. */
    per_second: z.boolean().default(false),
  })
  .strict();
export type Quota = z.infer<typeof quotaSchema>;

export const upstreamProfileSchema = z
  .object({
    /** From the request's arrival to the response head (status and headers). */
    head_ms: z.number().int().nonnegative().default(0),
    /** Random extra head time, uniform in [0, head_jitter_ms] (seeded). */
    head_jitter_ms: z.number().int().nonnegative().default(0),
    /** From the head to the first frame of the answer. */
    first_frame_ms: z.number().int().nonnegative().default(0),
    /** Stream pace: the frames go out as a model producing this many tokens a second would (0 = at once). */
    tokens_per_second: z.number().nonnegative().default(0),
    /** The whole answer's frames spread evenly over this long after the first frame (overrides tokens_per_second). */
    stream_ms: z.number().int().nonnegative().optional(),
    bursts: z.array(burstSchema).default([]),
    quota: quotaSchema.default({ per_second: false }),
    /** Seed of the random choices (jitter, burst shares), so a run can be repeated. */
    seed: z.number().int().default(1),
  })
  .strict();
export type UpstreamProfile = z.infer<typeof upstreamProfileSchema>;

export const upstreamProfiles = {
  /** Answers at once, never refuses: the stand-in of every functional test. */
  instant: upstreamProfileSchema.parse({}),
  /**
   * A busy endpoint on a shared key: a few seconds to the head, a slow stream, a
   * per-minute token throttle for 8 s of every minute, a 5xx burst every 3 minutes,
   * one answer in ten reset mid-stream during a 20 s window every 2 minutes, and a
   * key quota of 4 concurrent requests, 60 a minute, 200k tokens a minute.
   */
  loaded: upstreamProfileSchema.parse({
    head_ms: 2500,
    head_jitter_ms: 2500,
    first_frame_ms: 1500,
    tokens_per_second: 20,
    bursts: [
      { kind: "allocation_quota", from_ms: 20_000, for_ms: 8_000, every_ms: 60_000 },
      { kind: "server_error", from_ms: 95_000, for_ms: 3_000, every_ms: 180_000 },
      { kind: "reset_mid_stream", from_ms: 40_000, for_ms: 20_000, every_ms: 120_000, share: 0.1 },
    ],
    quota: { concurrent: 4, requests_per_minute: 60, tokens_per_minute: 200_000, per_second: false },
  }),
} satisfies Record<string, UpstreamProfile>;

export type UpstreamProfileName = keyof typeof upstreamProfiles;
export const upstreamProfileNames = Object.keys(upstreamProfiles) as UpstreamProfileName[];
export const upstreamProfileNameSchema = z.enum(upstreamProfileNames as [UpstreamProfileName]);

/** A named profile, or a named base with some fields replaced (`{base:"loaded", head_ms: 0}`). */
export const upstreamProfileChoiceSchema = z
  .union(
    [
      upstreamProfileNameSchema,
      z.object({ base: upstreamProfileNameSchema.default("instant") }).catchall(z.unknown()),
    ],
    { error: `expected a profile name (${upstreamProfileNames.join(", ")}) or {base, …fields}` },
  )
  .superRefine((choice, ctx) => {
    if (typeof choice === "string") return;
    const { base, ...fields } = choice;
    const checked = upstreamProfileSchema.safeParse({ ...upstreamProfiles[base], ...fields });
    for (const issue of checked.error?.issues ?? [])
      ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
  });
export type UpstreamProfileChoice =
  | UpstreamProfileName
  | ({ base?: UpstreamProfileName } & Partial<z.input<typeof upstreamProfileSchema>>);

/** The profile a choice names; its fields are checked against the profile schema (errors name the key). */
export function resolveUpstreamProfile(choice: UpstreamProfileChoice | undefined): UpstreamProfile {
  const parsed = upstreamProfileChoiceSchema.parse(choice ?? "instant");
  if (typeof parsed === "string") return upstreamProfiles[parsed];
  const { base, ...fields } = parsed;
  return upstreamProfileSchema.parse({ ...upstreamProfiles[base], ...fields });
}
