/**
 * The scripted upstream's own key quota, shared by every request it serves: requests
 * answered at once, requests and tokens admitted in any 60 s (and, with per_second,
 * in any 1 s at a sixtieth of that), as Model Studio enforces them per key. A request
 * over a limit is refused with the matching 429 and does not count; an admitted one
 * holds a concurrency slot until its answer ends.
 */

import type { Quota } from "../config/upstream-profile.ts";
import type { ProviderErrorKind } from "./provider-errors.ts";

export interface SharedQuota {
  /** Admits a request of `tokens` at `now`, or names the 429 it gets. */
  admit(
    tokens: number,
    now: number,
  ): { admitted: true; release: () => void } | { admitted: false; refusal: ProviderErrorKind };
  /** Requests being answered now. */
  inFlight(): number;
}

type Admission = { at: number; tokens: number };

export function createSharedQuota(quota: Quota): SharedQuota {
  let inFlight = 0;
  const admitted: Admission[] = [];

  function within(windowMs: number, now: number): { requests: number; tokens: number } {
    let requests = 0;
    let tokens = 0;
    for (const a of admitted) {
      if (a.at > now - windowMs) {
        requests += 1;
        tokens += a.tokens;
      }
    }
    return { requests, tokens };
  }

  function over(limit: number | undefined, used: number, adding: number): boolean {
    return limit !== undefined && used + adding > limit;
  }

  return {
    admit(tokens, now) {
      while (admitted.length > 0 && (admitted[0] as Admission).at <= now - 60_000) admitted.shift();
      if (quota.concurrent !== undefined && inFlight >= quota.concurrent)
        return { admitted: false, refusal: "rate_quota" };
      const minute = within(60_000, now);
      const second = quota.per_second ? within(1_000, now) : undefined;
      const perSecond = (limit: number | undefined) =>
        limit === undefined ? undefined : Math.max(1, limit / 60);
      if (
        over(quota.requests_per_minute, minute.requests, 1) ||
        (second && over(perSecond(quota.requests_per_minute), second.requests, 1))
      )
        return { admitted: false, refusal: "rate_quota" };
      // A single request larger than the whole minute's tokens is let through alone, as the real key would.
      const tpm = quota.tokens_per_minute;
      if (
        (minute.requests > 0 && over(tpm, minute.tokens, tokens)) ||
        (second && second.requests > 0 && over(perSecond(tpm), second.tokens, tokens))
      )
        return { admitted: false, refusal: "allocation_quota" };
      admitted.push({ at: now, tokens });
      inFlight += 1;
      let released = false;
      return {
        admitted: true,
        release: () => {
          if (released) return;
          released = true;
          inFlight -= 1;
        },
      };
    },
    inFlight: () => inFlight,
  };
}
