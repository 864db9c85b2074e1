import { expect, test } from "bun:test";
import { secretWeakness } from "../config/secret-strength.ts";
import { createRedactor, secretForms } from "./redactor.ts";

test("a secret is redacted raw, JSON-escaped once and twice, and URL-encoded", () => {
  const secret = 'pw"with\\odd chars&1';
  const redact = createRedactor(() => [secret]);
  const once = JSON.stringify({ m: secret });
  const twice = JSON.stringify({ raw: once });
  for (const text of [secret, once, twice, `?k=${encodeURIComponent(secret)}`]) {
    const out = redact(text);
    for (const form of secretForms(secret)) expect(out).not.toContain(form);
    expect(out).toContain("<redacted>");
  }
  // The JSON around an escaped secret stays JSON.
  expect(JSON.parse(redact(twice))).toEqual({ raw: JSON.stringify({ m: "<redacted>" }) });
});

test("every form is redacted whatever the secret starts with, and text without the secret is returned as it is", () => {
  for (const secret of [
    "sk-live-7f3a9c2e41b8",
    '"quoted"-secret-value',
    "%41-encoded-start",
    "é-non-ascii-secret",
  ]) {
    const redact = createRedactor(() => [secret, "another-secret-value"]);
    for (const form of secretForms(secret)) {
      const text = `{"a":"before ${form} after"}`;
      expect(redact(text)).toBe('{"a":"before <redacted> after"}');
    }
    const clean = `{"a":"${secret.slice(0, -1)}"}`;
    expect(redact(clean)).toBe(clean);
  }
});

test("short or plain secrets are refused by name, never quoted", () => {
  expect(secretWeakness("URA_CONTROL_PASSWORD", "record")).toMatch(/URA_CONTROL_PASSWORD is too short/);
  expect(secretWeakness("URA_CONTROL_PASSWORD", "aaaaaaaaaaaaaaaaaaaa")).toMatch(/too weak/);
  expect(secretWeakness("URA_UPSTREAM_API_KEY", "sk-7f3a9c2e41b8")).toBeUndefined();
  expect(secretWeakness("URA_UPSTREAM_API_KEY", undefined)).toBeUndefined();
  expect(secretWeakness("URA_CONTROL_PASSWORD", "record")).not.toContain('"record"');
});
