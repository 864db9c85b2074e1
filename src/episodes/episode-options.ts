/**
 * What a launcher may choose per episode (body of POST /control/episodes).
 */
import { z } from "zod";
import { contextPolicySchema } from "../context/policy-schema.ts";
import { manifestSchema } from "../manifest/manifest-schema.ts";

export const clientKindSchema = z.enum(["opencode", "gemini", "claude", "codex"]);
export type ClientKind = z.infer<typeof clientKindSchema>;

export const episodeOptionsSchema = z
  .object({
    /** Upstream model for this episode (defaults to the configured one). */
    model: z.string().min(1).optional(),
    /** Inline tool manifest (defaults to the embedded robot manifest). */
    manifest: manifestSchema.optional(),
    /** Delivered model exchanges allowed, final text included; 0 = no cap. */
    max_turns: z.number().int().min(0).default(0),
    /** Absent = the config's `context` default (unwrap: the schema's own default would hide the absence). */
    context: contextPolicySchema.unwrap().optional(),
    client: clientKindSchema.optional(),
    /**
     * Milliseconds from creation after which a running episode ends as failed (`deadline`):
     * admission closes, upstream work is cancelled, and with the manifest's `stop` the jobs
     * in flight are asked to stop. Absent = no deadline.
     */
    deadline_ms: z.number().int().positive().optional(),
    /** Refuse model requests from any client but the pinned version of `client` (manifests/clients/); default false. The status reports the detected client either way. */
    require_pinned_client: z.boolean().optional(),
  })
  .strict();
export type EpisodeOptions = z.infer<typeof episodeOptionsSchema>;
