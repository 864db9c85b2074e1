/**
 * episode.json as a restarted sidecar reads it: the description the episode
 * last wrote, plus `restore` — the SHA-256 digests of its ingress key and MCP
 * token (never the credentials) and its full tool manifest. Lenient where it can
 * be (unknown keys kept, optional parts defaulted) so an older description still
 * restores; strict on what decides safety (id, state).
 */
import { z } from "zod";
import { contextPolicySchema } from "../context/policy-schema.ts";
import { clientKindSchema } from "../episodes/episode-options.ts";
import { episodeIdPattern } from "../lib/ids.ts";
import { manifestSchema } from "../manifest/manifest-schema.ts";
import { type EpisodeCost, episodeCostSchema, sumByCurrency } from "../pricing/exchange-cost.ts";
import { readExchangeLine } from "../records/exchange-lines.ts";

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, "64 lower-case hex digits");

export const storedEpisodeSchema = z.looseObject({
  id: z.string().regex(episodeIdPattern),
  created_at: z.string(),
  state: z.enum(["running", "finished", "failed", "interrupted"]),
  failure: z
    .object({
      reason: z.enum(["provider_error", "max_turns", "cancelled", "interrupted"]),
      message: z.string(),
    })
    .nullable()
    .default(null),
  result: z.unknown().optional(),
  model: z.string().min(1),
  client: clientKindSchema.nullable().default(null),
  max_turns: z.number().int().min(0).default(0),
  context_policy: z.unknown().optional(),
  counters: z.record(z.string(), z.number()).default({}),
  mcp: z.record(z.string(), z.unknown()).optional(),
  restore: z
    .object({
      ingress_key_sha256: sha256Hex,
      mcp_token_sha256: sha256Hex,
      manifest: manifestSchema,
    })
    .optional(),
});
export type StoredEpisode = z.infer<typeof storedEpisodeSchema>;

/** The stored context policy, or identity when it no longer parses. */
export function storedContextPolicy(stored: StoredEpisode) {
  const parsed = contextPolicySchema.safeParse(stored.context_policy);
  return parsed.success ? parsed.data : contextPolicySchema.parse({ policy: "identity" });
}

/** The stored episode's cost so far, when it has one that parses. */
function storedCost(stored: StoredEpisode): EpisodeCost | undefined {
  const parsed = episodeCostSchema.safeParse(stored.cost);
  return parsed.success ? parsed.data : undefined;
}

/**
 * A restored episode's cost: the sum of the costs its exchange lines recorded, in the
 * currency they were priced in, whatever the price table says now (a restored episode
 * runs no exchange, so nothing is ever added to it in another currency). episode.json's
 * may lag the records by its last 250 ms (it is rewritten at most that often), so it is
 * taken only when the records hold no cost, or costs in more than one currency (records
 * the sidecar never writes for one episode): those are never added together.
 */
export function restoredCost(
  stored: StoredEpisode,
  exchangeLines: readonly unknown[],
): { cost?: EpisodeCost; perCurrency?: EpisodeCost[] } {
  const costs = exchangeLines.flatMap((line) => readExchangeLine("upstream_response", line)?.cost ?? []);
  const sums = sumByCurrency(costs);
  const fromStatus = storedCost(stored);
  if (sums.length > 1) return { ...(fromStatus ? { cost: fromStatus } : {}), perCurrency: sums };
  const cost = sums[0] ?? fromStatus;
  return cost ? { cost } : {};
}
