/**
 * The test run's temporary root outside /tmp (set by run-temp-root.ts), for client
 * kits and outputs that must not live under /tmp.
 */
export const varTmpEnv = "URA_TEST_VAR_TMP";

export function varTmp(): string {
  return process.env[varTmpEnv] ?? "/var/tmp/ura-e2e";
}
