#!/usr/bin/env bun
/**
 * Entry point: parse arguments, load config, start the server. The only file
 * with process-level side effects (signals, exit codes, stdout banners).
 */
import { parseArgs } from "node:util";
import { ConfigError, type ConfigFlags, loadConfig, readSecrets } from "./config/load-config.ts";
import { helpText } from "./cli/help.ts";
import { startSidecar } from "./server/start-sidecar.ts";
import packageJson from "../package.json" with { type: "json" };

const version = packageJson.version;

async function main(argv: string[]): Promise<number> {
  const [command = "serve", ...rest] = argv[0]?.startsWith("-") ? ["serve", ...argv] : argv;
  if (argv.includes("--version") || command === "version") {
    console.log(`ura-sidecar ${version}`);
    return 0;
  }
  if (argv.includes("--help") || argv.includes("-h") || command === "help") {
    console.log(helpText(version));
    return 0;
  }
  if (command !== "serve") {
    console.error(`ura-sidecar: unknown command "${command}"\n\n${helpText(version)}`);
    return 2;
  }
  let flags: ConfigFlags & { "validate-config"?: boolean };
  try {
    flags = parseArgs({
      args: rest,
      options: {
        config: { type: "string" },
        listen: { type: "string" },
        "data-dir": { type: "string" },
        model: { type: "string" },
        "upstream-url": { type: "string" },
        "log-level": { type: "string" },
        "default-episode": { type: "boolean" },
        "validate-config": { type: "boolean" },
      },
      strict: true,
    }).values as typeof flags;
  } catch (error) {
    console.error(`ura-sidecar serve: ${(error as Error).message}`);
    return 2;
  }
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(flags, process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  if (flags["validate-config"]) {
    console.log("configuration is valid");
    return 0;
  }
  const sidecar = await startSidecar({ config, secrets: readSecrets(process.env), version, out: (line) => console.log(line) });
  let signals = 0;
  const onSignal = (name: string) => {
    signals += 1;
    if (signals > 1) {
      console.error(`ura-sidecar: second ${name}: exiting now without completing the drain`);
      process.exit(130);
    }
    void sidecar.shutdown(`signal ${name}`).then((code) => process.exit(code));
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  return sidecar.closed;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0 || process.argv.includes("--version") || process.argv.includes("--help")) process.exit(code);
  },
  (error) => {
    console.error(`ura-sidecar: fatal: ${(error as Error).stack ?? error}`);
    process.exit(1);
  },
);
