/**
 * `ura-sidecar validate`: starts the sidecar in-process (inert executor, loopback
 * port, records under `<out>/data`, logs in `<out>/sidecar.log`), validates each
 * client in turn (validate-client.ts) and writes `<out>/validation.json` with every
 * client's result. The upstream is the embedded scripted one (proves the CLI and
 * the sidecar), or with `upstream` the configured real endpoint (proves the model
 * too: its own deviations from the script fail the validation). Resolves to the
 * exit code: 0 only when every check of every client passed.
 */
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { ClientBinary } from "../clients/installed-clients.ts";
import { loadConfig } from "../config/load-config.ts";
import { errorMessage } from "../lib/error-message.ts";
import { startSidecar } from "../server/start-sidecar.ts";
import { type ClientValidation, validateClient } from "./validate-client.ts";

export type RunValidationOptions = {
  binaries: ClientBinary[];
  outDir: string;
  version: string;
  network: "namespace" | "loopback";
  timeoutMs: number;
  wrongMcpToken?: boolean;
  /** Run against this endpoint instead of the scripted upstream. */
  upstream?: RealUpstream;
  progress: (line: string) => void;
};

export type RealUpstream = { url: string; apiKey: string | undefined; model: string | undefined };

/** What a validation ran against, named in every validation.json. */
export type ValidationTarget = {
  sidecar_version: string;
  upstream: "scripted" | "configured";
  upstream_host: string | null;
  model: string;
};

export async function runValidation(options: RunValidationOptions): Promise<number> {
  const outDir = resolve(options.outDir);
  mkdirSync(outDir, { recursive: true });
  const logFile = join(outDir, "sidecar.log");
  writeFileSync(logFile, "");
  // Nothing else from the caller's environment: the scripted upstream, or exactly the given one.
  const real = options.upstream;
  const config = loadConfig(
    {
      listen: "127.0.0.1:0",
      "data-dir": join(outDir, "data"),
      "log-level": "info",
      ...(real ? { "upstream-url": real.url, ...(real.model ? { model: real.model } : {}) } : {}),
    },
    {},
  );
  const target: ValidationTarget = {
    sidecar_version: options.version,
    upstream: real ? "configured" : "scripted",
    upstream_host: real ? new URL(real.url).host : null,
    model: config.upstream.model,
  };
  const sidecar = await startSidecar({
    config,
    secrets: { upstreamApiKey: real?.apiKey, controlPassword: randomBytes(18).toString("base64url") },
    version: options.version,
    out: (line) => appendFileSync(logFile, `${line}\n`),
    logWrite: (line) => appendFileSync(logFile, `${line}\n`),
  });
  const against = real
    ? `the configured upstream ${target.upstream_host} (model ${target.model})`
    : "the scripted upstream";
  options.progress(
    `validate: sidecar ${options.version} in-process on ${sidecar.baseUrl()} with ${against} and the inert executor (${options.network === "namespace" ? "loopback-only network namespace" : "plain loopback"}); output in ${outDir}`,
  );
  const results: ClientValidation[] = [];
  try {
    for (const binary of options.binaries) {
      options.progress(`validate ${binary.client}: ${binary.bin}`);
      try {
        results.push(
          await validateClient({
            sidecar,
            binary,
            outDir,
            timeoutMs: options.timeoutMs,
            wrongMcpToken: options.wrongMcpToken,
            target,
            progress: options.progress,
          }),
        );
      } catch (error) {
        options.progress(`  FAIL ${binary.client}: ${errorMessage(error)}`);
        results.push({
          ...target,
          client: binary.client,
          package: "",
          version: binary.version ?? null,
          pinned_version: "",
          pinned: null,
          binary: binary.bin,
          episode: "",
          kit: "",
          exit_code: null,
          duration_ms: 0,
          passed: false,
          model_deviations: [],
          checks: [
            {
              name: "validation ran",
              pass: false,
              evidence: String((error as Error).stack ?? error),
              evidence_paths: [logFile],
            },
          ],
        });
      }
    }
  } finally {
    await sidecar.shutdown("validate finished");
  }
  const passed = results.length > 0 && results.every((r) => r.passed);
  writeFileSync(
    join(outDir, "validation.json"),
    `${JSON.stringify({ passed, ...target, network: options.network, sidecar_log: logFile, clients: results }, null, 2)}\n`,
  );
  for (const r of results) {
    const failed = r.checks.filter((c) => !c.pass);
    const why =
      failed.length > 0
        ? ` (${failed.length} check(s) failed, first: ${failed[0]?.evidence.split(";")[0]})`
        : "";
    options.progress(
      `${r.passed ? "PASS" : "FAIL"} ${r.client} ${r.version ?? ""}${why} — ${join(outDir, r.client, "validation.json")}`,
    );
  }
  return passed ? 0 : 1;
}
