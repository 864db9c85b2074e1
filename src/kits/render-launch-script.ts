/**
 * The kit's `launch` script: `./launch "<prompt>"` runs the client once,
 * non-interactive, in a clean environment (`env -i`: only PATH and the kit's own
 * variables reach the CLI), stdin closed, in the kit's empty working directory.
 * Credentials are sourced from credentials.env (0600), so they never appear in
 * any process's argv.
 */
import { join } from "node:path";
import type { ClientManifest } from "../clients/client-manifests.ts";
import type { KitPlan } from "./kit-plan.ts";

/** A POSIX shell single-quoted word. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

export function renderEnvFile(vars: Record<string, string>): string {
  return Object.entries(vars)
    .map(([name, value]) => `${name}=${shellQuote(value)}\n`)
    .join("");
}

export const credentialsFileName = "credentials.env";

export function renderLaunchScript(
  plan: KitPlan,
  dir: string,
  manifest: ClientManifest,
  episodeId: string,
): string {
  const splitWords = plan.args.some((a) => typeof a !== "string" && a.prompt === "words");
  const argv = plan.args.map((a) =>
    typeof a === "string" ? shellQuote(a) : a.prompt === "words" ? '"$@"' : '"$1"',
  );
  return `#!/bin/sh
# ura-sidecar client kit: ${manifest.package}@${manifest.version} for episode ${episodeId}.
# Usage: ./launch "<prompt>"   (written by \`ura-sidecar client-config ${plan.client}\`)
set -eu
kit=${shellQuote(dir)}
if [ "\${URA_KIT_CLEAN:-}" != 1 ]; then
  if [ "$#" -ne 1 ]; then echo 'usage: launch "<prompt>"' >&2; exit 2; fi
  # Start again with an empty environment: only PATH and what follows reach the CLI.
  exec env -i URA_KIT_CLEAN=1 PATH="$PATH" /bin/sh "$0" "$1"
fi
unset URA_KIT_CLEAN
set -a
. "$kit/${credentialsFileName}"
${renderEnvFile(plan.env).trimEnd()}
set +a
if ! command -v ${shellQuote(plan.bin)} >/dev/null 2>&1; then
  echo ${shellQuote(`launch: '${plan.bin}' is not on PATH: install the pinned client (npm install -g ${manifest.package}@${manifest.version}) or write the kit again with --binary PATH`)} >&2
  exit 127
fi
cd ${shellQuote(plan.cwd)}
${splitWords ? "set -f\nset -- $1\nset +f\n" : ""}exec ${shellQuote(plan.bin)} ${argv.join(" ")} </dev/null
`;
}

export function launchScriptPath(dir: string): string {
  return join(dir, "launch");
}
