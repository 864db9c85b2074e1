/**
 * A client kit before it is written: the files a client needs, its environment
 * (settings apart from credentials), its credentials (kept in a 0600 env file,
 * never in argv or in a world-readable file) and its argv. One planner per
 * client builds it (`plan-*-kit.ts`); write-kit.ts puts it on disk with a
 * `launch` script, and launchCommand() turns it into a spawnable command.
 */
import { join } from "node:path";
import type { ClientManifest, ClientName } from "../clients/client-manifests.ts";
import { defaultLongestToolCallMs } from "../config/tool-call-wait.ts";
import type { LaunchInfo } from "./launch-info.ts";

/** Where the prompt goes in argv: as one argument, or split on spaces (OpenCode's `run [message..]`). */
export type PromptArg = { prompt: "whole" | "words" };

export type KitPlan = {
  client: ClientName;
  /** Directories to create (absolute). */
  dirs: string[];
  /** Files to write (absolute paths), all mode 0600. */
  files: { path: string; content: string }[];
  /** Environment of the CLI apart from PATH and the credentials. */
  env: Record<string, string>;
  /** Credentials by variable name: only in credentials.env (0600). */
  credentials: Record<string, string>;
  bin: string;
  args: (string | PromptArg)[];
  cwd: string;
  /** The model name the client asks for. */
  model: string;
};

export type KitInput = {
  /** Absolute kit directory; config files name absolute paths inside it. */
  dir: string;
  episode: LaunchInfo;
  manifest: ClientManifest;
  /** The CLI executable (absolute path or a name on PATH). */
  bin: string;
  /** OpenCode only: load the call-id plugin from this file instead of a copy inside the kit. */
  pluginFile?: string;
  /** The model name to ask for (default: the episode's for Gemini CLI, `ura-qwen` for the others). */
  model?: string;
};

/** The model name clients send when the episode does not insist (any name works; Gemini must use the episode's). */
export const clientModelName = "ura-qwen";

/** Settings shared by every client: own HOME and temp dir, plain terminal, an empty working directory. */
export function commonKitParts(dir: string) {
  const home = join(dir, "home");
  const tmp = join(dir, "tmp");
  const cwd = join(dir, "cwd");
  return {
    home,
    cwd,
    dirs: [home, tmp, cwd],
    env: { HOME: home, TMPDIR: tmp, LANG: "C.UTF-8", TERM: "dumb" },
  };
}

export function jsonFile(path: string, value: unknown): { path: string; content: string } {
  return { path, content: `${JSON.stringify(value, null, 2)}\n` };
}

/** argv for one prompt. */
export function renderArgs(args: KitPlan["args"], prompt: string): string[] {
  return args.flatMap((a) =>
    typeof a === "string" ? [a] : a.prompt === "whole" ? [prompt] : prompt.split(" "),
  );
}

/** What to spawn to run the kit's CLI directly (no launch script): tests and the capture harness. */
export function launchCommand(plan: KitPlan, prompt: string, path = process.env.PATH ?? "/usr/bin:/bin") {
  return {
    cmd: [plan.bin, ...renderArgs(plan.args, prompt)],
    cwd: plan.cwd,
    env: { PATH: path, ...plan.env, ...plan.credentials },
  };
}

/**
 * How long the client must wait for one MCP tool call: as long as the sidecar may
 * hold it, so a robot action still running is never reported to the model as timed
 * out (and then called again).
 */
export function toolCallTimeoutMs(episode: LaunchInfo): number {
  return episode.tool_call_timeout_ms ?? defaultLongestToolCallMs;
}

/** upstream.deadline_ms's default, for launch info from a sidecar that does not say. */
const defaultModelDeadlineMs = 600_000;

/**
 * How long the client may wait for one model answer without a byte: the sidecar's
 * deadline for the exchange and a minute for the answer to travel. A streaming answer
 * is kept alive long before (src/exchange/keep-streaming-alive.ts); this covers what
 * cannot be (a non-streaming request, keepalives turned off).
 */
export function modelWaitMs(episode: LaunchInfo): number {
  return (episode.model_deadline_ms ?? defaultModelDeadlineMs) + 60_000;
}

/** The MCP token as a reference that Claude Code (mcp.json) and Gemini CLI (settings.json) expand from the environment. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: a reference the client expands, not a template of ours
export const mcpTokenReference = "${URA_MCP_TOKEN}";
