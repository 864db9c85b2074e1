/**
 * `ura-sidecar validate`: starts the sidecar in-process (scripted upstream playing
 * Qwen, inert executor, loopback port, records under `<out>/data`, logs in
 * `<out>/sidecar.log`), validates each client in turn (validate-client.ts) and
 * writes `<out>/validation.json` with every client's result. Resolves to the
 * exit code: 0 only when every check of every client passed.
 */
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadConfig } from "../config/load-config.ts";
import { startSidecar } from "../server/start-sidecar.ts";
import type { ClientBinary } from "./installed-clients.ts";
import { type ClientValidation, validateClient } from "./validate-client.ts";

export type RunValidationOptions = {
  binaries: ClientBinary[];
  outDir: string;
  version: string;
  network: "namespace" | "loopback";
  timeoutMs: number;
  wrongMcpToken?: boolean;
  progress: (line: string) => void;
};

export async function runValidation(options: RunValidationOptions): Promise<number> {
  const outDir = resolve(options.outDir);
  mkdirSync(outDir, { recursive: true });
  const logFile = join(outDir, "sidecar.log");
  writeFileSync(logFile, "");
  // Nothing from the caller's environment: always the embedded scripted upstream.
  const config = loadConfig(
    { listen: "127.0.0.1:0", "data-dir": join(outDir, "data"), "log-level": "info" },
    {},
  );
  const sidecar = await startSidecar({
    config,
    secrets: { upstreamApiKey: undefined, controlPassword: randomBytes(18).toString("base64url") },
    version: options.version,
    out: (line) => appendFileSync(logFile, `${line}\n`),
    logWrite: (line) => appendFileSync(logFile, `${line}\n`),
  });
  options.progress(
    `validate: sidecar ${options.version} in-process on ${sidecar.baseUrl()} with the scripted upstream and the inert executor (${options.network === "namespace" ? "loopback-only network namespace" : "plain loopback"}); output in ${outDir}`,
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
            progress: options.progress,
          }),
        );
      } catch (error) {
        options.progress(`  FAIL ${binary.client}: ${(error as Error).message}`);
        results.push({
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
    `${JSON.stringify({ passed, sidecar_version: options.version, network: options.network, sidecar_log: logFile, clients: results }, null, 2)}\n`,
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
