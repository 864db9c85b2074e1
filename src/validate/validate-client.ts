/**
 * One client's validation against a running in-process sidecar: create an
 * episode, write its kit, run the real CLI once through the kit's `launch`
 * script on the smoke prompt, then judge the episode from evidence only
 * (checkSmokeEpisode, the MCP connection, the CLI's exit and User-Agents).
 * Everything it used is left in `<out>/<client>/` and named by the checks.
 */

import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ClientName, clientManifests } from "../clients/client-manifests.ts";
import type { ClientBinary } from "../clients/installed-clients.ts";
import { episodeOptionsSchema } from "../episodes/episode-options.ts";
import { episodeStatusSchema } from "../episodes/episode-status.ts";
import { createKit } from "../kits/create-kit.ts";
import { launchInfoSchema } from "../kits/launch-info.ts";
import type { Sidecar } from "../server/start-sidecar.ts";
import { modelDeviations } from "./model-deviations.ts";
import type { ValidationTarget } from "./run-validation.ts";
import { checkSmokeEpisode, ledgerLines, readSmokeRecords } from "./smoke-checks.ts";

export const smokePrompt =
  "Use the ura robot tools: observe the scene, record the observation nonce twice, then finish with the colour you saw.";

export type ValidationCheck = { name: string; pass: boolean; evidence: string; evidence_paths: string[] };

export type ClientValidation = ValidationTarget & {
  client: ClientName;
  package: string;
  version: string | null;
  pinned_version: string;
  /** A proven version (the pin or another of the manifest's proven_versions). */
  pinned: boolean | null;
  binary: string;
  episode: string;
  kit: string;
  exit_code: number | null;
  duration_ms: number;
  passed: boolean;
  checks: ValidationCheck[];
  /** Where the model left the smoke script, in plain words (empty when it followed it). */
  model_deviations: string[];
};

export type ValidateClientOptions = {
  sidecar: Sidecar;
  binary: ClientBinary;
  outDir: string;
  timeoutMs: number;
  /** Self-test: the kit gets a wrong MCP token, so validation must fail. */
  wrongMcpToken?: boolean;
  target: ValidationTarget;
  progress: (line: string) => void;
};

/** Evidence files behind each smoke check (by check name prefix). */
function smokeEvidence(name: string, records: string, upstreamFile: string, statusFile: string): string[] {
  if (name.startsWith("image")) return [join(records, "exchanges.jsonl"), upstreamFile];
  if (name.startsWith("episode finished")) return [statusFile, join(records, "episode.json")];
  if (name.startsWith("complete records"))
    return [join(records, "ledger.jsonl"), join(records, "exchanges.jsonl")];
  return [join(records, "ledger.jsonl")];
}

export async function validateClient(options: ValidateClientOptions): Promise<ClientValidation> {
  const { sidecar, binary, progress } = options;
  const client = binary.client;
  const manifest = clientManifests[client];
  const dir = join(options.outDir, client);
  mkdirSync(dir, { recursive: true });

  const episode = sidecar.episodes.create(episodeOptionsSchema.parse({ client }));
  const info = launchInfoSchema.parse(JSON.parse(JSON.stringify(sidecar.episodes.launchInfo(episode))));
  const kitEpisode = options.wrongMcpToken
    ? { ...info, mcp_token: `ura_mcp_wrong_${randomBytes(16).toString("hex")}` }
    : info;
  const kit = createKit({ client, episode: kitEpisode, dir: join(dir, "kit"), bin: binary.bin });
  for (const w of kit.warnings) progress(`  note: ${w}`);
  progress(
    `  episode ${episode.id}; kit written to ${kit.dir}${options.wrongMcpToken ? " (with a WRONG MCP token, on purpose)" : ""}`,
  );

  const stdoutFile = join(dir, "client-stdout.txt");
  const stderrFile = join(dir, "client-stderr.txt");
  const stdoutFd = openSync(stdoutFile, "w", 0o600);
  const stderrFd = openSync(stderrFile, "w", 0o600);
  progress(`  running ${client} ${binary.version ?? "(version unknown)"}: ${kit.launch} "<smoke prompt>"`);
  const started = Date.now();
  const proc = Bun.spawn([kit.launch, smokePrompt], {
    cwd: dir,
    stdin: "ignore",
    stdout: stdoutFd,
    stderr: stderrFd,
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, options.timeoutMs);
  const exitCode = await proc.exited;
  clearTimeout(timer);
  closeSync(stdoutFd);
  closeSync(stderrFd);
  const durationMs = Date.now() - started;
  progress(
    `  ${client} exited ${timedOut ? `(killed after ${options.timeoutMs} ms)` : exitCode} after ${(durationMs / 1000).toFixed(1)} s`,
  );

  // Handlers still finishing (an admitted callback, a record write) settle before judging.
  await Promise.race([episode.handlersSettled(), Bun.sleep(10_000)]);
  const status = episodeStatusSchema.parse(JSON.parse(JSON.stringify(episode.describe())));
  const statusFile = join(dir, "episode-status.json");
  writeFileSync(statusFile, `${JSON.stringify(status, null, 2)}\n`);
  const records = status.records_dir;
  // What the upstream received and answered, as the sidecar recorded it on the wire.
  const smokeRecords = readSmokeRecords(records);
  const upstreamFile = join(dir, "upstream-requests.json");
  writeFileSync(upstreamFile, `${JSON.stringify(smokeRecords.upstream, null, 2)}\n`);

  const smoke = checkSmokeEpisode(smokeRecords, status).map((c) => ({
    ...c,
    evidence_paths: smokeEvidence(c.name, records, upstreamFile, statusFile),
  }));
  const identity = status.client_identity;
  const connected = status.mcp.initialized && status.mcp.tools_listed;
  const stderrTail = readFileSync(stderrFile, "utf8").slice(-300).trim();
  const checks: ValidationCheck[] = [
    {
      name: "MCP side connected (initialize and tools/list)",
      pass: connected,
      evidence: connected
        ? `initialize and tools/list completed (MCP User-Agent ${JSON.stringify(status.mcp.user_agent ?? null)})`
        : `the MCP side never connected: ${client} ${status.mcp.initialized ? "completed initialize but never tools/list" : "never completed MCP initialize"} on ${info.urls.mcp}; ${identity.model_requests_without_mcp} model request(s) came without it. A wrong MCP token makes every client silently drop the robot tools — check URA_MCP_TOKEN in ${kit.credentials}`,
      evidence_paths: [statusFile, join(options.outDir, "sidecar.log")],
    },
    ...smoke,
    {
      name: "client exited normally",
      pass: exitCode === 0 && !timedOut,
      evidence: timedOut
        ? `killed after ${options.timeoutMs} ms`
        : `exit code ${exitCode}${exitCode !== 0 && stderrTail ? `; stderr ends: ${stderrTail}` : ""}`,
      evidence_paths: [stdoutFile, stderrFile],
    },
    {
      name: `User-Agents identify ${client}`,
      pass:
        identity.model_client?.client === client &&
        (identity.mcp_client === null || identity.mcp_client.client === client),
      evidence: `model: ${JSON.stringify(identity.model_user_agent)} → ${JSON.stringify(identity.model_client)}; MCP: ${JSON.stringify(status.mcp.user_agent ?? null)} → ${JSON.stringify(identity.mcp_client)}; a proven version of ${manifest.package} (${manifest.proven_versions.join(", ")}; pinned ${manifest.version}): ${identity.pinned}`,
      evidence_paths: [statusFile],
    },
  ];
  const result: ClientValidation = {
    ...options.target,
    client,
    package: manifest.package,
    version: identity.model_client?.version ?? binary.version ?? null,
    pinned_version: manifest.version,
    pinned: identity.pinned,
    binary: binary.bin,
    episode: episode.id,
    kit: kit.dir,
    exit_code: timedOut ? null : exitCode,
    duration_ms: durationMs,
    passed: checks.every((c) => c.pass),
    checks,
    model_deviations: modelDeviations(ledgerLines(smokeRecords), smokeRecords.upstream),
  };
  writeFileSync(join(dir, "validation.json"), `${JSON.stringify(result, null, 2)}\n`);
  for (const c of checks)
    progress(`  ${c.pass ? "PASS" : "FAIL"} ${c.name}${c.pass ? "" : `: ${c.evidence}`}`);
  for (const d of result.model_deviations) progress(`  model deviation: ${d}`);
  return result;
}
