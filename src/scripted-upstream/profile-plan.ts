/**
 * A profile turned into decisions for one request: which burst window (if any) it
 * falls into, how long until its response head, and the pause before each frame of
 * its answer. Random choices come from a seeded generator, so a run repeats; time
 * comes from the injected clock, measured from the upstream's start (or its reset).
 */
import type { BurstKind, UpstreamProfile } from "../config/upstream-profile.ts";
import { seededRandom } from "../lib/seeded-random.ts";

export interface ProfilePlan {
  /** The failure a request arriving at `now` gets, if it falls into a burst window. */
  burstAt(now: number): BurstKind | undefined;
  /** Milliseconds from the request's arrival to its response head. */
  headDelayMs(): number;
  /** The pause before each frame (the first: from the head). */
  frameDelaysMs(frames: readonly string[]): number[];
  /** Windows count from here on (the upstream's reset). */
  restart(now: number): void;
}

/** Tokens a frame carries: its text or tool-argument delta at ~4 characters a token. */
function frameTokens(frame: string): number {
  let chars = 0;
  for (const match of frame.matchAll(/"(?:content|arguments)":"((?:[^"\\]|\\.)*)"/g))
    chars += match[1]?.length ?? 0;
  return Math.ceil(chars / 4);
}

export function createProfilePlan(profile: UpstreamProfile, startedAt: number): ProfilePlan {
  const random = seededRandom(profile.seed);
  let origin = startedAt;
  return {
    burstAt(now) {
      const elapsed = now - origin;
      for (const burst of profile.bursts) {
        const since = elapsed - burst.from_ms;
        if (since < 0) continue;
        const into = burst.every_ms === undefined ? since : since % burst.every_ms;
        if (into >= burst.for_ms) continue;
        if (burst.share >= 1 || random() < burst.share) return burst.kind;
      }
      return undefined;
    },
    headDelayMs: () => profile.head_ms + Math.round(random() * profile.head_jitter_ms),
    frameDelaysMs(frames) {
      const { stream_ms: streamMs, tokens_per_second: rate } = profile;
      return frames.map((frame, i) => {
        const pause =
          streamMs !== undefined
            ? i === 0
              ? 0
              : streamMs / Math.max(1, frames.length - 1)
            : rate > 0
              ? (frameTokens(frame) / rate) * 1000
              : 0;
        return Math.round(pause + (i === 0 ? profile.first_frame_ms : 0));
      });
    },
    restart(now) {
      origin = now;
    },
  };
}
