/**
 * Identifiers: the id generator the composition root injects (random in the binary,
 * fixed in tests) and the episode id format. Episode ids are path-safe by
 * construction and validated on every route; tokens are 256-bit random.
 */
import { randomBytes } from "node:crypto";

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
