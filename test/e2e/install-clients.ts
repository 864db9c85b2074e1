// Installs the four pinned agent CLIs (manifests/clients/*.json) with npm into
// .clients/<client>/, so end-to-end tests and fixture capture run the exact versions
// the fixtures were recorded with. Skips a client whose pinned version is already there.
// Usage: bun test/e2e/install-clients.ts [opencode gemini claude codex]
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";

export const clientNames = ["opencode", "gemini", "claude", "codex"] as const;
export type ClientName = (typeof clientNames)[number];

export const clientManifestSchema = z.object({
  client: z.enum(clientNames),
  package: z.string(),
  version: z.string(),
  bin: z.string(),
  protocol: z.enum(["responses", "gemini", "messages"]),
  user_agent_pattern: z.string(),
  mcp_user_agent_pattern: z.string(),
  mcp_identity: z.enum(["plugin_call_id", "none", "meta_claudecode_toolUseId", "meta_callId"]),
  tool_name_scheme: z.string(),
});
export type ClientManifest = z.infer<typeof clientManifestSchema>;

const repoRoot = resolve(import.meta.dir, "../..");
export const clientsRoot = join(repoRoot, ".clients");

export function readClientManifest(client: ClientName): ClientManifest {
  const file = join(repoRoot, "manifests/clients", `${client}.json`);
  return clientManifestSchema.parse(JSON.parse(readFileSync(file, "utf8")));
}

export function clientDir(client: ClientName): string {
  return join(clientsRoot, client);
}

export function clientBinPath(client: ClientName): string {
  return join(clientDir(client), "node_modules/.bin", readClientManifest(client).bin);
}

/** The version of the client's package installed under .clients/, or undefined. */
export function installedVersion(client: ClientName): string | undefined {
  const { package: pkg } = readClientManifest(client);
  const file = join(clientDir(client), "node_modules", pkg, "package.json");
  if (!existsSync(file)) return undefined;
  return z.object({ version: z.string() }).parse(JSON.parse(readFileSync(file, "utf8"))).version;
}

async function run(cmd: string[], cwd: string): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, out: `${out}${err}` };
}

/** Installs each named client at its pinned version; returns the --version output of each. */
export async function installClients(
  names: readonly ClientName[] = clientNames,
): Promise<Record<string, string>> {
  const versions: Record<string, string> = {};
  for (const client of names) {
    const m = readClientManifest(client);
    const dir = clientDir(client);
    if (installedVersion(client) !== m.version || !existsSync(clientBinPath(client))) {
      // Inside the tests' loopback-only namespace npm would hang on the registry: fail at once.
      if (process.env.URA_E2E_NETNS === "1") {
        throw new Error(`${m.package}@${m.version} is not installed in .clients/ and this is an offline namespace: run make clients first`);
      }
      mkdirSync(dir, { recursive: true });
      const spec = `${m.package}@${m.version}`;
      const res = await run(["npm", "install", "--prefix", dir, "--no-audit", "--no-fund", spec], dir);
      if (res.code !== 0) throw new Error(`npm install ${spec} failed (${res.code}):\n${res.out}`);
      if (installedVersion(client) !== m.version) throw new Error(`${spec}: wrong version installed`);
    }
    const check = await run([clientBinPath(client), "--version"], dir);
    if (check.code !== 0) throw new Error(`${client} --version failed (${check.code}):\n${check.out}`);
    versions[client] = check.out.trim();
  }
  return versions;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const names = args.length > 0 ? args.map((a) => z.enum(clientNames).parse(a)) : clientNames;
  const versions = await installClients(names);
  for (const [client, v] of Object.entries(versions)) console.log(`${client}\t${v}`);
}
