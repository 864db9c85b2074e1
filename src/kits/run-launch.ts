/** Runs a client launch (argv, cwd, environment) with stdin closed, killed after `timeoutMs`; its output is kept whole. */
export type LaunchSpec = { cmd: string[]; cwd: string; env: Record<string, string> };
export type LaunchRun = { stdout: string; stderr: string; code: number; ms: number };

export async function runLaunch(launch: LaunchSpec, timeoutMs: number): Promise<LaunchRun> {
  const started = Date.now();
  const proc = Bun.spawn(launch.cmd, {
    cwd: launch.cwd,
    env: launch.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill(), timeoutMs);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { stdout, stderr, code, ms: Date.now() - started };
}
