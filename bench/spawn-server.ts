/**
 * Starts a server process for a bench and resolves with the URL its start-up banner
 * prints (15 s at most, else it is killed). The rest of its stdout is drained, so a
 * chatty server never blocks on a full pipe while it is measured. One still running
 * when the bench ends (an exit, SIGINT, SIGTERM) is killed then (exit-cleanup.ts).
 */
import { resolve } from "node:path";
import { killAtExit } from "../test/support/exit-cleanup.ts";

const root = resolve(import.meta.dir, "..");

export type SpawnedServer = { url: string; proc: ReturnType<typeof Bun.spawn> };

export async function spawnServer(
  args: string[],
  pattern: RegExp,
  options: { env?: Record<string, string>; stderr?: "inherit" | "ignore" } = {},
): Promise<SpawnedServer> {
  const proc = Bun.spawn(args, {
    cwd: root,
    env: options.env,
    stdout: "pipe",
    stderr: options.stderr ?? "inherit",
  });
  killAtExit(proc);
  const decoder = new TextDecoder();
  let out = "";
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    out += decoder.decode(value);
    const url = pattern.exec(out)?.[1];
    if (url) {
      void (async () => {
        while (!(await reader.read()).done) {}
      })();
      return { url, proc };
    }
  }
  proc.kill();
  throw new Error(`${args.join(" ")} did not start: ${out}`);
}

/** The instant mock Chat Completions upstream every bench measures against (`--text`: text answers only). */
export function spawnInstantUpstream(...flags: "--text"[]): Promise<SpawnedServer> {
  return spawnServer(
    ["node_modules/.bin/bun", "bench/instant-chat-upstream.ts", ...flags],
    /listening: (http:\/\/\S+)/,
  );
}

/** The pass-through floor: forwards to `upstreamUrl` and does nothing else. */
export function spawnPassThroughFloor(upstreamUrl: string): Promise<SpawnedServer> {
  return spawnServer(
    ["node_modules/.bin/bun", "bench/pass-through-proxy.ts", upstreamUrl],
    /listening: (http:\/\/\S+)/,
  );
}

/** Polls `url` every millisecond until it answers 2xx; resolves with that moment (performance.now()). */
export async function untilAnswers(url: string): Promise<number> {
  for (;;) {
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return performance.now();
    await Bun.sleep(1);
  }
}
