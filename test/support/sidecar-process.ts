/**
 * Starts the compiled binary (dist/ura-sidecar) for end-to-end tests: on a free
 * loopback port, a temporary data directory, a given upstream and, if given, a
 * config object (written to a file of its own for --config). Reads the URL from
 * its banner; stops it with SIGTERM and reports the exit code. A test's temporary
 * directories go when its run ends (run-temp-root.ts); a bench, which has no such
 * root, stops it with stopAndRemove so the directories made here go with it. A sidecar
 * still running and the directories made here still present when this process ends
 * (an exit, SIGINT, SIGTERM) are killed and removed then (exit-cleanup.ts).
 */

import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { type EpisodeStatus, episodeStatusSchema } from "../../src/episodes/episode-status.ts";
import { killAtExit, removeDirectoryNow, temporaryDirectory } from "./exit-cleanup.ts";

export const binaryPath = process.env.URA_BINARY ?? resolve(import.meta.dir, "../../dist/ura-sidecar");
export const controlPassword = "test-control-password-0123456789";

/** Runs the compiled binary once (a command such as `records` or `export`) to its exit. */
export async function runBinary(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ stdout: string; stderr: string; code: number }> {
  const proc = Bun.spawn([binaryPath, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  killAtExit(proc);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { stdout, stderr, code };
}

export type SidecarProcess = {
  url: string;
  dataDir: string;
  proc: ReturnType<typeof Bun.spawn>;
  output: () => string;
  control: (path: string, init?: RequestInit) => Promise<Response>;
  createEpisode: (options?: Record<string, unknown>) => Promise<LaunchInfo>;
  episode: (id: string) => Promise<EpisodeStatus>;
  stop: (signal?: NodeJS.Signals) => Promise<number>;
  /** SIGTERM and wait; throws with the exit code, the signal and everything it printed unless it exited 0. */
  stopCleanly: () => Promise<void>;
  /**
   * stop, then remove the directories made here for it: its data directory unless the
   * caller gave one (the caller owns that), and its config file's directory.
   */
  stopAndRemove: () => Promise<number>;
};

export type LaunchInfo = {
  id: string;
  urls: { responses: string; gemini: string; anthropic: string; mcp: string };
  ingress_key: string;
  mcp_token: string;
  records_dir: string;
};
export type { EpisodeStatus };

/** Writes a config object as the JSON file --config reads, in a temporary directory of its own. */
function writeConfigFile(config: Record<string, unknown>): string {
  const path = join(temporaryDirectory("ura-e2e-config-"), "config.json");
  writeFileSync(path, JSON.stringify(config));
  return path;
}

export async function startSidecarProcess(
  options: {
    upstreamUrl?: string;
    dataDir?: string;
    /** Settings for the binary's config file (written for it and passed as `--config`, before `args`). */
    config?: Record<string, unknown>;
    args?: string[];
    env?: Record<string, string>;
    /** Another build of the binary (the bench compares builds); default binaryPath. */
    binary?: string;
  } = {},
): Promise<SidecarProcess> {
  const dataDir = options.dataDir ?? temporaryDirectory("ura-e2e-");
  const configPath = options.config ? writeConfigFile(options.config) : undefined;
  const madeHere = [
    ...(options.dataDir === undefined ? [dataDir] : []),
    ...(configPath ? [dirname(configPath)] : []),
  ];
  const removeMadeHere = () => {
    for (const dir of madeHere) removeDirectoryNow(dir);
  };
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/tmp",
    URA_CONTROL_PASSWORD: controlPassword,
    ...(options.upstreamUrl
      ? { URA_UPSTREAM_URL: options.upstreamUrl, URA_UPSTREAM_API_KEY: "sk-test-upstream-secret-key" }
      : {}),
    ...options.env,
  };
  const proc = Bun.spawn(
    [
      options.binary ?? binaryPath,
      "serve",
      "--listen",
      "127.0.0.1:0",
      "--data-dir",
      dataDir,
      ...(configPath ? ["--config", configPath] : []),
      ...(options.args ?? []),
    ],
    {
      env,
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  killAtExit(proc);
  let output = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) output += decoder.decode(chunk, { stream: true });
  };
  const pumped = Promise.all([
    pump(proc.stdout as ReadableStream<Uint8Array>),
    pump(proc.stderr as ReadableStream<Uint8Array>),
  ]);
  const deadline = Date.now() + 15_000;
  let url: string | undefined;
  while (!url) {
    url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
    if (url) break;
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill();
      // An exit can be seen before its last output was read: read to the end (bounded) first.
      await Promise.race([pumped, Bun.sleep(2_000)]);
      await proc.exited;
      removeMadeHere();
      throw new Error(`sidecar did not start (exit ${proc.exitCode}):\n${output}`);
    }
    await Bun.sleep(20);
  }
  const base = url;
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (proc.exitCode === null) proc.kill(signal);
    return await proc.exited;
  };
  const control = (path: string, init: RequestInit = {}) =>
    fetch(`${base}/control${path}`, {
      // A fresh connection each time: a pooled one can be the one the sidecar is closing for
      // idleness right then (server.idle_timeout_seconds), and the request fails with ECONNRESET.
      keepalive: false,
      ...init,
      headers: {
        authorization: `Bearer ${controlPassword}`,
        "content-type": "application/json",
        ...(init.headers ?? {}),
      },
    });
  return {
    url: base,
    dataDir,
    proc,
    output: () => output,
    control,
    async createEpisode(episodeOptions = {}) {
      const res = await control("/episodes", { method: "POST", body: JSON.stringify(episodeOptions) });
      if (res.status !== 201) throw new Error(`create episode: HTTP ${res.status} ${await res.text()}`);
      return (await res.json()) as LaunchInfo;
    },
    async episode(id: string) {
      const res = await control(`/episodes/${id}`);
      return episodeStatusSchema.parse(await res.json());
    },
    stop,
    async stopAndRemove() {
      const code = await stop();
      removeMadeHere();
      return code;
    },
    async stopCleanly() {
      const code = await stop();
      if (code === 0) return;
      // The output may still be in the pipes when the exit is seen: read to the end (bounded).
      await Promise.race([pumped, Bun.sleep(2_000)]);
      throw new Error(
        `sidecar did not stop cleanly: exit ${code}${proc.signalCode ? ` (killed by ${proc.signalCode})` : ""}; its output:\n${output}`,
      );
    },
  };
}
