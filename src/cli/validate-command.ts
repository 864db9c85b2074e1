/**
 * `ura-sidecar validate --client <name> | --all [--binary PATH] --out DIR [--upstream [--model M]]`:
 * argument handling, the network namespace, then run-validation.ts. With
 * `--upstream` the smoke episode runs against the configured endpoint
 * (URA_UPSTREAM_URL, URA_UPSTREAM_API_KEY from the environment): that endpoint is
 * usually not on this machine, so no loopback-only namespace is made for it.
 */
import { type ClientName, clientNameSchema, clientNames } from "../clients/client-manifests.ts";
import { type ClientBinary, givenBinary, installedClient } from "../clients/installed-clients.ts";
import { insideNamespaceEnv, planNamespace, reexecInNamespace } from "../validate/network-namespace.ts";
import { type RealUpstream, runValidation } from "../validate/run-validation.ts";
import { parseFlags, usageError } from "./command-flags.ts";

export const usage = `usage: ura-sidecar validate (--client <${clientNames.join("|")}> [--binary PATH] | --all) --out DIR
       [--clients-dir DIR] [--timeout SECONDS] [--wrong-mcp-token]
       [--upstream [--model NAME]]   against URA_UPSTREAM_URL (key: URA_UPSTREAM_API_KEY) instead of the scripted upstream`;

const validateFlags = {
  client: { type: "string" },
  all: { type: "boolean" },
  binary: { type: "string" },
  out: { type: "string" },
  "clients-dir": { type: "string" },
  timeout: { type: "string" },
  "wrong-mcp-token": { type: "boolean" },
  upstream: { type: "boolean" },
  model: { type: "string" },
} as const;

export async function validateCommand(
  args: string[],
  version: string,
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  const fail = usageError("validate", usage);
  const parsed = parseFlags({ args, options: validateFlags });
  if (parsed instanceof Error) return fail(parsed.message);
  const { values } = parsed;
  if (!values.out) return fail("--out DIR is required");
  if (Boolean(values.all) === (values.client !== undefined))
    return fail("give exactly one of --client NAME and --all");
  if (values.all && values.binary) return fail("--binary goes with --client, not --all");
  const timeoutMs = Number(values.timeout ?? "240") * 1000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    return fail(`--timeout ${values.timeout}: expected seconds`);
  const clientsDir = values["clients-dir"] ?? ".clients";
  if (values.model !== undefined && !values.upstream)
    return fail("--model goes with --upstream (the scripted upstream plays one model)");
  let upstream: RealUpstream | undefined;
  if (values.upstream) {
    const url = env.URA_UPSTREAM_URL;
    if (!url)
      return fail("--upstream needs URA_UPSTREAM_URL (the Chat Completions API root) in the environment");
    if (!URL.canParse(url)) return fail("URA_UPSTREAM_URL is not a URL");
    upstream = { url, apiKey: env.URA_UPSTREAM_API_KEY || undefined, model: values.model ?? env.URA_MODEL };
    if (!upstream.apiKey)
      console.log("validate: note: URA_UPSTREAM_API_KEY is not set; requests go without a key");
  }

  const binaries: ClientBinary[] = [];
  if (values.client !== undefined) {
    const parsed = clientNameSchema.safeParse(values.client);
    if (!parsed.success) return fail(`unknown client ${JSON.stringify(values.client)}`);
    const client: ClientName = parsed.data;
    const binary = values.binary
      ? await givenBinary(client, values.binary, process.cwd())
      : installedClient(client, clientsDir);
    if (!binary)
      return fail(
        `${client} is not installed in ${clientsDir}/${client} (make e2e installs it) and no --binary was given`,
      );
    binaries.push(binary);
  } else {
    for (const client of clientNames) {
      const binary = installedClient(client, clientsDir);
      if (binary) binaries.push(binary);
      else console.log(`validate: ${client} is not installed in ${clientsDir}/${client}: skipped`);
    }
    if (binaries.length === 0)
      return fail(`no pinned client is installed in ${clientsDir} (make e2e installs them)`);
  }

  const namespace =
    upstream && env[insideNamespaceEnv] !== "1"
      ? ({
          kind: "unavailable",
          reason: "--upstream reaches an endpoint outside any loopback-only namespace",
        } as const)
      : planNamespace(env);
  if (namespace.kind === "reexec") {
    console.log(
      `validate: re-running inside a loopback-only network namespace (${namespace.unshare.join(" ")})`,
    );
    return await reexecInNamespace(namespace.unshare, ["validate", ...args]);
  }
  if (namespace.kind === "unavailable") {
    console.log(
      `validate: note: ${namespace.reason}; running on plain loopback — the CLIs are not kept off the network`,
    );
  }
  return await runValidation({
    binaries,
    outDir: values.out,
    version,
    network: namespace.kind === "inside" ? "namespace" : "loopback",
    timeoutMs,
    wrongMcpToken: values["wrong-mcp-token"],
    ...(upstream ? { upstream } : {}),
    progress: (line) => console.log(line),
  });
}
