/**
 * Identifiers and credentials. Episode ids are path-safe by construction and
 * validated on every route; tokens are 256-bit random.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";

export type Ids = {
  episodeId(): string;
  token(prefix: string): string;
  callId(): string;
};

export function createRandomIds(): Ids {
  return {
    episodeId: () => `ep_${randomBytes(8).toString("hex")}`,
    token: (prefix) => `${prefix}_${randomBytes(32).toString("base64url")}`,
    callId: () => `call_${randomBytes(12).toString("hex")}`,
  };
}

export const episodeIdPattern = /^ep_[a-z0-9]{1,64}$/;

/** Constant-time comparison of a presented credential with the expected one. */
export function credentialMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
