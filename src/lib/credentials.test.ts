import { describe, expect, test } from "bun:test";
import { credentialDigest, credentialDigestRef, credentialMatches } from "./credentials.ts";
import { createRandomIds } from "./ids.ts";

describe("credentialMatches", () => {
  const token = createRandomIds().token("ura_mcp");

  test("a credential matches itself only", () => {
    expect(credentialMatches(token, token)).toBe(true);
    expect(credentialMatches(`${token}x`, token)).toBe(false);
    expect(credentialMatches(token.slice(0, -1), token)).toBe(false);
    expect(credentialMatches("", token)).toBe(false);
    expect(credentialMatches(undefined, token)).toBe(false);
  });

  test("a digest reference (restored episode) matches the credential, never the digest itself", () => {
    const digest = credentialDigest(token);
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(digest).not.toContain(token);
    const ref = credentialDigestRef(digest);
    expect(credentialMatches(token, ref)).toBe(true);
    expect(credentialMatches(digest, ref)).toBe(false);
    expect(credentialMatches(ref, ref)).toBe(false);
    expect(credentialMatches(`sha256:${digest}`, ref)).toBe(false);
  });

  test("without a stored digest nothing matches", () => {
    const ref = credentialDigestRef(undefined);
    expect(credentialMatches(token, ref)).toBe(false);
    expect(credentialMatches("", ref)).toBe(false);
    expect(credentialMatches("-", ref)).toBe(false);
  });

  test("a configured value that looks like a digest is still a plain credential", () => {
    const password = `sha256:${credentialDigest("x")}`;
    expect(credentialMatches(password, password)).toBe(true);
    expect(credentialMatches("x", password)).toBe(false);
  });
});
