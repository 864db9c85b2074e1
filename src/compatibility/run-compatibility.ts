/**
 * `make compat CLIENT=<client> N=<releases>`: the client's last N npm releases, each
 * installed into a cache folder and run through the smoke episode (`ura-sidecar
 * validate`) and the client's end-to-end scenarios, the other clients at their pins;
 * the results go into docs/compatibility.json and the table docs/compatibility.md.
 * Not part of CI's default run: it downloads every release and takes minutes each.
 * Installing needs the registry, so only the test runs go into the loopback-only
 * network namespace. Run it on an otherwise quiet machine, one client at a time.
 * Usage: bun src/compatibility/run-compatibility.ts --client <name> [--versions N] [--also V,V…] [--cache DIR]
 * (`--also`: versions to run besides the last N, e.g. an earlier pin; `--render-only`: the
 * table again from docs/compatibility.json, after a manifest's proven_versions changed.)
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  type ClientName,
  clientManifests,
  clientNameSchema,
  clientNames,
} from "../clients/client-manifests.ts";
import { clientsRoot } from "../clients/install-clients.ts";
import { installedClient } from "../clients/installed-clients.ts";
import { runLaunch } from "../kits/run-launch.ts";
import { insideNamespaceEnv, planNamespace } from "../validate/network-namespace.ts";
import {
  compatibilitySchema,
  renderCompatibility,
  type VersionRun,
  withRuns,
} from "./compatibility-table.ts";
import { lastReleases, type Release } from "./npm-releases.ts";
import { scenarioResults } from "./scenario-results.ts";

const repoRoot = resolve(import.meta.dir, "../..");
const binary = join(repoRoot, "dist/ura-sidecar");
const recordFile = join(repoRoot, "docs/compatibility.json");
const tableFile = join(repoRoot, "docs/compatibility.md");
/** One test file's run: its tests wait up to 10 minutes each, a hung run is cut after 30. */
const testRunMs = 30 * 60_000;

/** A command in the repository, with this environment (npm needs its CA and proxy settings) plus `env`. */
async function run(cmd: string[], env: Record<string, string> = {}, timeoutMs = testRunMs) {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  return runLaunch({ cmd, cwd: repoRoot, env: { ...inherited, ...env } }, timeoutMs);
}

async function releases(client: ClientName, count: number, also: string[]): Promise<Release[]> {
  const m = clientManifests[client];
  const view = await run(["npm", "view", m.package, "time", "--json"], {}, 120_000);
  if (view.code !== 0) throw new Error(`npm view ${m.package} time failed (${view.code}): ${view.stderr}`);
  return lastReleases(JSON.parse(view.stdout) as Record<string, string>, count, also);
}

/**
 * A clients folder laid out like .clients/ (URA_CLIENTS_DIR) with `client` at
 * `version`, installed once into the cache, and the other clients at their pins.
 */
async function clientsFolder(cache: string, client: ClientName, version: string): Promise<string> {
  const m = clientManifests[client];
  const install = join(cache, "installs", client, version);
  const installed = existsSync(join(install, "node_modules", m.package, "package.json"));
  if (!installed) {
    mkdirSync(install, { recursive: true });
    const res = await run(
      ["npm", "install", "--prefix", install, "--no-audit", "--no-fund", `${m.package}@${version}`],
      {},
      900_000,
    );
    if (res.code !== 0)
      throw new Error(
        `npm install ${m.package}@${version} failed (${res.code}):\n${res.stderr.slice(-2000)}`,
      );
  }
  const folder = join(cache, "clients", `${client}-${version}`);
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  for (const name of clientNames) {
    const target = name === client ? install : realpathSync(join(clientsRoot, name));
    symlinkSync(target, join(folder, name));
  }
  const found = installedClient(client, folder)?.version;
  if (found !== version)
    throw new Error(`${m.package}: ${version} wanted, ${found ?? "nothing"} installed in ${install}`);
  return folder;
}

/** `bun test` of the given files (and test name pattern) inside the loopback-only namespace; its output kept in `log`. */
async function testRun(folder: string, log: string, files: string[], pattern?: string) {
  const plan = planNamespace({});
  const bun = process.execPath;
  const args = ["test", "--timeout", "600000", ...files, ...(pattern ? ["-t", pattern] : [])];
  const env = { URA_CLIENTS_DIR: folder, URA_E2E_NETNS: "1", [insideNamespaceEnv]: "1" };
  const cmd =
    plan.kind === "reexec"
      ? [...plan.unshare, "sh", "-c", 'ip link set lo up && exec "$0" "$@"', bun, ...args]
      : [bun, ...args];
  const res = await run(cmd, plan.kind === "reexec" ? env : { URA_CLIENTS_DIR: folder });
  const output = `${res.stdout}\n${res.stderr}`;
  writeFileSync(log, output);
  return scenarioResults(output);
}

async function runVersion(cache: string, client: ClientName, release: Release): Promise<VersionRun> {
  console.log(`${client} ${release.version} (released ${release.date}): installing`);
  const folder = await clientsFolder(cache, client, release.version);
  const out = mkdtempSync(join(cache, "validate-"));
  const smoke = await run([binary, "validate", "--client", client, "--clients-dir", folder, "--out", out]);
  console.log(`  smoke episode: ${smoke.code === 0 ? "pass" : `FAIL (evidence in ${out})`}`);
  const logs = join(cache, "logs");
  mkdirSync(logs, { recursive: true });
  const log = (name: string) => join(logs, `${client}-${release.version}-${name}.log`);
  const scenarios = [
    ...(await testRun(folder, log("e2e"), [`test/e2e/${client}.e2e.test.ts`])),
    // Only this client's case of the file: the others are filtered out (and reported as skipped).
    ...(
      await testRun(
        folder,
        log("failed-result-images"),
        ["test/e2e/failed-result-images.e2e.test.ts"],
        `${client}: `,
      )
    ).filter((s) => s.scenario.startsWith(`${client}: `)),
  ];
  for (const s of scenarios) console.log(`  ${s.result.padEnd(4)} ${s.scenario}`);
  if (scenarios.some((s) => s.result !== "pass")) console.log(`  test output: ${log("*")}`);
  return {
    version: release.version,
    released: release.date,
    tested: new Date().toISOString().slice(0, 10),
    smoke: smoke.code === 0 ? "pass" : "fail",
    scenarios,
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      client: { type: "string" },
      versions: { type: "string" },
      also: { type: "string" },
      cache: { type: "string" },
      "render-only": { type: "boolean" },
    },
  });
  const before = existsSync(recordFile)
    ? compatibilitySchema.parse(JSON.parse(readFileSync(recordFile, "utf8")))
    : { clients: {} };
  if (values["render-only"]) {
    // The table again from the kept results, e.g. after a manifest's proven_versions changed.
    writeFileSync(tableFile, renderCompatibility(before));
    console.log(`${tableFile} written`);
    process.exit(0);
  }
  const client = clientNameSchema.parse(values.client);
  const count = Number(values.versions ?? "3");
  if (!Number.isInteger(count) || count < 1)
    throw new Error(`--versions ${values.versions}: a whole number of releases`);
  if (!existsSync(binary)) throw new Error(`${binary} is missing: make build first`);
  const cache = resolve(values.cache ?? "/var/tmp/ura-compat");
  const runs: VersionRun[] = [];
  const also = values.also ? values.also.split(",") : [];
  for (const release of await releases(client, count, also))
    runs.push(await runVersion(cache, client, release));
  const record = withRuns(before, client, runs);
  writeFileSync(recordFile, `${JSON.stringify(record, null, 2)}\n`);
  writeFileSync(tableFile, renderCompatibility(record));
  console.log(`${client}: ${runs.length} releases; ${tableFile} written`);
}
