/**
 * Secrets the sidecar redacts by value (the upstream key, the control password)
 * must be long and varied enough that they never occur in ordinary text: a
 * password such as `record` would turn every tool name in the records into
 * `<redacted>`. A weak one is refused at start-up, naming the variable, never
 * quoting the value.
 */
export const minSecretChars = 12;
const minDistinctChars = 6;

/** Why the secret in `variable` is refused, or undefined when it is strong enough. */
export function secretWeakness(variable: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.length < minSecretChars) {
    return `${variable} is too short (${value.length} characters; at least ${minSecretChars}): redacting it from records and answers would damage them`;
  }
  if (new Set(value).size < minDistinctChars) {
    return `${variable} is too weak (fewer than ${minDistinctChars} different characters): redacting it from records and answers would damage them`;
  }
  return undefined;
}
