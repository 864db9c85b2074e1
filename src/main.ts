#!/usr/bin/env bun
/**
 * Entry point: parse arguments, load config, start the server. The only file
 * with process-level side effects (signals, exit codes, stdout banners).
 * Exit codes: 0 clean (drained) shutdown, 1 fatal error, 2 usage/config error,
 * 3 cleanup failure (the drain overran shutdown.drain_deadline_ms; records frozen
 * with complete:false), 130 a second signal forced the exit mid-drain (or mid-start).
 * `serve` catches SIGTERM and SIGINT before it opens anything; one that arrives
 * while the sidecar is still starting is acted on as soon as it has started (the
 * same drain and freeze as always), so nothing it opened is left half-done. Only a
 * signal during the binary's own loading, before any of this code runs and before
 * anything is opened, still ends it the default way (exit 143 for SIGTERM).
 */
import { parseArgs } from "node:util";
import packageJson from "../package.json" with { type: "json" };
import { helpText } from "./cli/help.ts";
import type { ConfigFlags } from "./config/load-config.ts";
import type { Config } from "./config/schema.ts";
import { errorMessage } from "./lib/error-message.ts";
import type { Sidecar } from "./server/start-sidecar.ts";

const version = packageJson.version;

/** Each command's code is loaded when that command runs, not every command's on every start. */
const commands = {
  "client-config": () => import("./cli/client-config-command.ts"),
  validate: () => import("./cli/validate-command.ts"),
  records: () => import("./cli/records-command.ts"),
  export: () => import("./cli/export-dataset-command.ts"),
};

function isCommand(name: string): name is keyof typeof commands {
  return Object.hasOwn(commands, name);
}

async function main(argv: string[]): Promise<number> {
  const [command = "serve", ...rest] = argv[0]?.startsWith("-") ? ["serve", ...argv] : argv;
  if (argv.includes("--version") || command === "version") {
    console.log(`ura-sidecar ${version}`);
    return 0;
  }
  if (argv.includes("--help") || argv.includes("-h") || command === "help") {
    // What `ura-sidecar <command> --help` prints: that command's own usage.
    console.log(isCommand(command) ? (await commands[command]()).usage : helpText(version));
    return 0;
  }
  if (command === "client-config")
    return (await commands["client-config"]()).clientConfigCommand(rest, process.env);
  if (command === "validate") return (await commands.validate()).validateCommand(rest, version);
  if (command === "records") return (await commands.records()).recordsCommand(rest, process.env);
  if (command === "export") return (await commands.export()).exportDatasetCommand(rest, version, process.env);
  if (command !== "serve") {
    console.error(`ura-sidecar: unknown command "${command}"\n\n${helpText(version)}`);
    return 2;
  }
  // Caught before the data directory is locked or any worker started: the default
  // action would end the process between those steps, skipping the drain and the freeze.
  let signals = 0;
  let stopRequested: string | undefined;
  let sidecar: Sidecar | undefined;
  const onSignal = (name: string) => {
    signals += 1;
    if (signals > 1) {
      console.error(`ura-sidecar: second ${name}: exiting now without completing the drain`);
      process.exit(130);
    }
    stopRequested = name;
    if (sidecar) void sidecar.shutdown(`signal ${name}`).then((code) => process.exit(code));
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  const [{ ConfigError, loadConfig, readSecrets }, { DataDirLockedError }, { startSidecar }] =
    await Promise.all([
      import("./config/load-config.ts"),
      import("./records/data-dir-lock.ts"),
      import("./server/start-sidecar.ts"),
    ]);
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
        "context-policy": { type: "string" },
        "upstream-profile": { type: "string" },
        "validate-config": { type: "boolean" },
      },
      strict: true,
    }).values as typeof flags;
  } catch (error) {
    console.error(`ura-sidecar serve: ${errorMessage(error)}`);
    return 2;
  }
  let config: Config;
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
  try {
    sidecar = await startSidecar({
      config,
      secrets: readSecrets(process.env),
      version,
      out: (line) => console.log(line),
    });
  } catch (error) {
    // Settings that can only be checked at start-up (e.g. shipping credentials) are configuration errors too.
    if (error instanceof ConfigError || error instanceof DataDirLockedError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  if (stopRequested) return sidecar.shutdown(`signal ${stopRequested} during start-up`);
  return sidecar.closed;
}

// Exit explicitly: after a shutdown (signal or POST /control/shutdown) a stray timer
// (an executor long-poll, a retry wait) must not keep the process alive.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(`ura-sidecar: fatal: ${(error as Error).stack ?? error}`);
    process.exit(1);
  },
);
