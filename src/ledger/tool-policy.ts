/**
 * What the ledger asks of an episode's tool policy (compiled from the manifest by
 * src/manifest/tool-policy.ts): whether a claimed call needs a person's approval
 * before it may run, and its tool's rate limit; and the rate check itself, pure:
 * from the times the tool's earlier calls passed it, whether one more may pass now.
 * See docs/approvals.md.
 */

export interface ToolPolicy {
  /** The rule that makes this call need approval (shown to the operator, journaled), or undefined. */
  approvalRule(tool: string, args: Readonly<Record<string, unknown>>): string | undefined;
  /** The tool's rate limit, if it has one. */
  rate(tool: string): RateLimit | undefined;
}

export type RateLimit = { readonly per_minute?: number; readonly min_interval_ms?: number };

/** Which limit a call is over, and the sentence the model sees. */
export type RateProblem = { readonly limit: "per_minute" | "min_interval_ms"; readonly reason: string };

export const noToolPolicy: ToolPolicy = { approvalRule: () => undefined, rate: () => undefined };

const minuteMs = 60_000;

/**
 * Whether one more call of `tool` may pass at `now`, given the times (ascending)
 * at which its earlier calls of the episode passed this check.
 */
export function checkRate(
  tool: string,
  limit: RateLimit,
  times: readonly number[],
  now: number,
): RateProblem | undefined {
  const last = times.at(-1);
  if (limit.min_interval_ms !== undefined && last !== undefined && now - last < limit.min_interval_ms) {
    return {
      limit: "min_interval_ms",
      reason: `rate limit of ${tool}: at least ${limit.min_interval_ms} ms between calls (rate.min_interval_ms); the previous call passed ${now - last} ms ago`,
    };
  }
  if (limit.per_minute !== undefined) {
    const recent = times.filter((t) => now - t < minuteMs).length;
    if (recent >= limit.per_minute) {
      return {
        limit: "per_minute",
        reason: `rate limit of ${tool}: at most ${limit.per_minute} call(s) per minute (rate.per_minute); ${recent} passed in the last 60 s`,
      };
    }
  }
  return undefined;
}

/** The times still needed for later checks (the last minute's, and the latest one). */
export function keepRecentTimes(times: readonly number[], now: number): number[] {
  const recent = times.filter((t) => now - t < minuteMs);
  const last = times.at(-1);
  return recent.length === 0 && last !== undefined ? [last] : recent;
}
