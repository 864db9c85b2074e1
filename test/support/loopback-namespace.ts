/**
 * Runs an end-to-end test file inside a loopback-only network namespace (tests
 * only), so nothing a real CLI tries can leave the machine. Outside, the file
 * registers one test that re-runs `bun test <file>` under `unshare -n` (the probe
 * of src/validate/network-namespace.ts, which also tries `unshare -rn`), with
 * `lo` up and URA_E2E_NETNS=1; inside (or where no namespace can be made) it
 * registers the file's own tests. URA_VALIDATE_NETNS=1 rides along, so an
 * `ura-sidecar validate` started in there knows it already is in a namespace.
 */
import { describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { insideNamespaceEnv, planNamespace } from "../../src/validate/network-namespace.ts";
import { killAtExit } from "./exit-cleanup.ts";

export const e2eNamespaceEnv = "URA_E2E_NETNS";
export const insideE2eNamespace = process.env[e2eNamespaceEnv] === "1";

const repoRoot = resolve(import.meta.dir, "../..");

/**
 * `register` declares the file's tests. They run inside the namespace when one
 * can be made (the outer test then waits `timeoutMs` for the whole inner run),
 * else on plain loopback.
 */
export function describeInLoopbackNamespace(
  name: string,
  options: { file: string; timeoutMs: number },
  register: () => void,
): void {
  const plan = insideE2eNamespace ? { kind: "inside" as const } : planNamespace({});
  if (plan.kind === "reexec") {
    test(
      `${name}, inside a loopback-only network namespace`,
      async () => {
        const proc = Bun.spawn(
          [
            ...plan.unshare,
            "sh",
            "-c",
            'ip link set lo up && exec "$0" "$@"',
            process.execPath,
            "test",
            options.file,
          ],
          {
            cwd: repoRoot,
            env: { ...process.env, [e2eNamespaceEnv]: "1", [insideNamespaceEnv]: "1" },
            stdio: ["ignore", "inherit", "inherit"],
          },
        );
        // Told to stop with this run (SIGTERM: it stops its own sidecars and clients first).
        killAtExit(proc, "SIGTERM");
        expect(await proc.exited).toBe(0);
      },
      options.timeoutMs,
    );
    return;
  }
  describe(
    `${name} ${plan.kind === "inside" ? "(inside the network namespace)" : "(on loopback: no network namespace available)"}`,
    register,
  );
}
