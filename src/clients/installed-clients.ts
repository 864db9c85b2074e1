/**
 * Where `validate` finds each pinned CLI: `--binary`, or the npm install that
 * `make e2e` puts in `.clients/<client>/` (src/clients/install-clients.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type ClientName, clientManifests } from "./client-manifests.ts";

export type ClientBinary = {
  client: ClientName;
  bin: string;
  version: string | undefined;
  source: "clients-dir" | "binary";
};

/** The CLI installed under `<clientsDir>/<client>/`, when its package is there. */
export function installedClient(client: ClientName, clientsDir: string): ClientBinary | undefined {
  const m = clientManifests[client];
  const root = join(resolve(clientsDir), client, "node_modules");
  const pkg = join(root, m.package, "package.json");
  const bin = join(root, ".bin", m.bin);
  if (!existsSync(pkg) || !existsSync(bin)) return undefined;
  const version = (JSON.parse(readFileSync(pkg, "utf8")) as { version?: string }).version;
  return { client, bin, version, source: "clients-dir" };
}

/** A CLI given by path: its version from `--version` (first x.y.z printed). */
export async function givenBinary(client: ClientName, path: string, cwd: string): Promise<ClientBinary> {
  const bin = resolve(path);
  if (!existsSync(bin)) throw new Error(`--binary ${path}: no such file`);
  const proc = Bun.spawn([bin, "--version"], {
    cwd,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd },
  });
  const timer = setTimeout(() => proc.kill(), 30_000);
  const [out, err] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { client, bin, version: /\d+\.\d+\.\d+/.exec(`${out}\n${err}`)?.[0], source: "binary" };
}
