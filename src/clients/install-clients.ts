// Installs the four pinned agent CLIs (manifests/clients/*.json) with npm into
// .clients/<client>/, so end-to-end tests, fixture capture and `validate` run the exact
// versions the fixtures were recorded with. Skips a client whose pinned version is there.
// Usage: bun src/clients/install-clients.ts [opencode gemini claude codex]
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { type ClientName, clientManifests, clientNameSchema, clientNames } from "./client-manifests.ts";
import { installedClient } from "./installed-clients.ts";

const repoRoot = resolve(import.meta.dir, "../..");
/**
 * `.clients/` of the checkout, or `URA_CLIENTS_DIR`: a folder laid out the same way
 * holding other versions (a candidate pin, the compatibility runs), so the
 * end-to-end tests and the fixture capture can run against them.
 */
export const clientsRoot = process.env.URA_CLIENTS_DIR
  ? resolve(process.env.URA_CLIENTS_DIR)
  : join(repoRoot, ".clients");

export function clientDir(client: ClientName): string {
  return join(clientsRoot, client);
}

export function clientBinPath(client: ClientName): string {
  return join(clientDir(client), "node_modules/.bin", clientManifests[client].bin);
}

/** The version of the client's package installed under .clients/ (command included), or undefined. */
export function installedVersion(client: ClientName): string | undefined {
  return installedClient(client, clientsRoot)?.version;
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

/**
 * Installs each named client at its pinned version (in a URA_CLIENTS_DIR, only a client
 * missing there); returns the --version output of each.
 */
export async function installClients(
  names: readonly ClientName[] = clientNames,
): Promise<Record<string, string>> {
  const versions: Record<string, string> = {};
  for (const client of names) {
    const m = clientManifests[client];
    const dir = clientDir(client);
    // A URA_CLIENTS_DIR holds the versions under test: what is there stays.
    const kept = process.env.URA_CLIENTS_DIR !== undefined && installedVersion(client) !== undefined;
    if (!kept && installedVersion(client) !== m.version) {
      // Inside the tests' loopback-only namespace npm would hang on the registry: fail at once.
      if (process.env.URA_E2E_NETNS === "1") {
        throw new Error(
          `${m.package}@${m.version} is not installed in .clients/ and this is an offline namespace: run make clients first`,
        );
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
  const names = args.length > 0 ? args.map((a) => clientNameSchema.parse(a)) : clientNames;
  const versions = await installClients(names);
  for (const [client, v] of Object.entries(versions)) console.log(`${client}\t${v}`);
}
