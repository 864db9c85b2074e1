/**
 * Runs `validate` inside a loopback-only network namespace when the system allows
 * it: the process re-executes itself under `unshare -n` (or `unshare -rn` without
 * root), brings `lo` up and carries on there, so the in-process sidecar and the
 * real CLI share 127.0.0.1 and nothing the CLI tries can leave the machine.
 */
export const insideNamespaceEnv = "URA_VALIDATE_NETNS";

export type NamespacePlan =
  | { kind: "inside" }
  | { kind: "reexec"; unshare: string[] }
  | { kind: "unavailable"; reason: string };

const bringUpLo = 'ip link set lo up && exec "$0" "$@"';

export function planNamespace(env: Record<string, string | undefined> = process.env): NamespacePlan {
  if (env[insideNamespaceEnv] === "1") return { kind: "inside" };
  for (const unshare of [
    ["unshare", "-n"],
    ["unshare", "-r", "-n"],
  ]) {
    try {
      const probe = Bun.spawnSync([...unshare, "sh", "-c", "ip link set lo up"], {
        stdout: "ignore",
        stderr: "ignore",
      });
      if (probe.exitCode === 0) return { kind: "reexec", unshare };
    } catch {
      break; // no unshare binary at all
    }
  }
  return { kind: "unavailable", reason: "`unshare -n` (with `ip link set lo up`) does not work here" };
}

/** This process's own command line: the compiled binary, or bun + script. */
export function selfCommand(args: string[]): string[] {
  const script = process.argv[1];
  const compiled = script === undefined || script.startsWith("/$bunfs/");
  return compiled ? [process.execPath, ...args] : [process.execPath, script, ...args];
}

/** Re-runs this command inside the namespace; resolves to its exit code. */
export async function reexecInNamespace(unshare: string[], args: string[]): Promise<number> {
  const proc = Bun.spawn([...unshare, "sh", "-c", bringUpLo, ...selfCommand(args)], {
    env: { ...process.env, [insideNamespaceEnv]: "1" },
    stdio: ["ignore", "inherit", "inherit"],
  });
  return await proc.exited;
}
