/**
 * Credentials (episode tokens, the control password), compared as SHA-256 digests
 * in constant time. An episode restored after a restart knows only the digests of
 * its credentials (kept in episode.json, never the tokens): its expected value is a digest reference
 * (`credentialDigestRef`), which starts with a NUL character, so no value
 * presented in an HTTP header or configured through the environment can ever
 * be taken for one.
 */
import { createHash, timingSafeEqual } from "node:crypto";

const digestRefPrefix = "\u0000sha256:";

/** SHA-256 of a credential, hex: what episode.json keeps instead of the credential. */
export function credentialDigest(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** An expected credential known only by its digest (a restored episode); matched by `credentialMatches`. */
export function credentialDigestRef(digestHex: string | undefined): string {
  // Without a stored digest nothing can match: a digest of 64 hex digits is never "-".
  return `${digestRefPrefix}${digestHex ?? "-"}`;
}

/** Constant-time comparison of a presented credential with the expected one (a credential or a digest reference). */
export function credentialMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = createHash("sha256").update(presented, "utf8").digest();
  const b = expected.startsWith(digestRefPrefix)
    ? Buffer.from(expected.slice(digestRefPrefix.length), "hex")
    : createHash("sha256").update(expected, "utf8").digest();
  return b.length === a.length && timingSafeEqual(a, b);
}
