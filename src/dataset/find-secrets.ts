/**
 * Finds secrets in dataset text, by shape and by value: the credentials the
 * sidecar generates (ingress API keys, MCP tokens), bearer tokens, API keys shaped
 * like the upstream's (`sk-…`), and the exact values of the secrets the export
 * was given (upstream API key, control password). It names what it found and
 * where, never the secret itself.
 */
const shapes: { kind: string; pattern: RegExp }[] = [
  { kind: "a sidecar credential (ura_key_/ura_mcp_ token)", pattern: /ura_(?:key|mcp)_[A-Za-z0-9_-]{20,}/ },
  { kind: "a bearer token", pattern: /\bBearer\s+[A-Za-z0-9._~+/-]{16,}/i },
  { kind: "an API key (sk-…)", pattern: /\bsk-[A-Za-z0-9_-]{16,}/ },
];

export type SecretFinder = (text: string) => string[];

export function createSecretFinder(values: (string | undefined)[]): SecretFinder {
  const known = values.filter((v): v is string => typeof v === "string" && v.length >= 4);
  return (text) => {
    const found = shapes.filter(({ pattern }) => pattern.test(text)).map(({ kind }) => kind);
    if (known.some((value) => text.includes(value)))
      found.push("the value of a configured secret (upstream API key or control password)");
    return found;
  };
}
