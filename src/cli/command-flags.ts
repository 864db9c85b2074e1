/**
 * What every subcommand does with its arguments: parse them strictly (an unknown
 * flag or a missing value is an error, never ignored), and answer a usage error as
 * `ura-sidecar <command>: <why>` followed by the usage, exit code 2.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";

/** The parsed flags and positionals (strict, parseArgs' default), or the parse error to report as a usage error. */
export function parseFlags<T extends ParseArgsConfig & { strict?: true }>(
  config: T,
): ReturnType<typeof parseArgs<T>> | Error {
  try {
    return parseArgs(config);
  } catch (error) {
    return error as Error;
  }
}

/** Reports a usage error of `command` through `write` and returns its exit code. */
export function usageError(
  command: string,
  usage: string,
  write: (text: string) => void = (text) => console.error(text),
): (message: string) => 2 {
  return (message) => {
    write(`ura-sidecar ${command}: ${message}\n${usage}`);
    return 2;
  };
}
