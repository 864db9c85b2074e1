/**
 * The compiled binary as a user meets it: self-contained, --version/--help,
 * offline config validation, start on embedded defaults, clean SIGTERM.
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binaryPath, startSidecarProcess } from "../support/sidecar-process.ts";

const bareEnv = { PATH: "/usr/bin:/bin", HOME: "/tmp" };

describe("dist/ura-sidecar", () => {
  test("copied alone into an empty directory, it runs (--version, --help)", () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-alone-"));
    copyFileSync(binaryPath, join(dir, "ura-sidecar"));
    const version = Bun.spawnSync(["./ura-sidecar", "--version"], { cwd: dir, env: bareEnv });
    expect(version.exitCode).toBe(0);
    expect(version.stdout.toString()).toMatch(/^ura-sidecar \d+\.\d+\.\d+/);
    const help = Bun.spawnSync(["./ura-sidecar", "--help"], { cwd: dir, env: bareEnv });
    expect(help.exitCode).toBe(0);
    expect(help.stdout.toString()).toContain("--validate-config");
    expect(readdirSync(dir)).toEqual(["ura-sidecar"]);
  });

  test("a subcommand's --help prints that command's usage, not the general help", () => {
    for (const [command, words] of [
      ["records", "records list"],
      ["validate", "validate (--client"],
      ["client-config", "client-config <"],
      ["export", "export dataset --out DIR"],
    ]) {
      const help = Bun.spawnSync([binaryPath, command as string, "--help"], { env: bareEnv });
      expect({ command, exit: help.exitCode }).toEqual({ command, exit: 0 });
      expect(help.stdout.toString()).toContain(`usage: ura-sidecar ${words}`);
      expect(help.stdout.toString()).not.toContain("--validate-config");
    }
  });

  test("serve --validate-config exits non-zero naming each bad key", () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-cfg-"));
    writeFileSync(
      join(dir, "c.json"),
      JSON.stringify({ upstream: { retry: { max_attempts: "x" } }, listen: 7 }),
    );
    const bad = Bun.spawnSync([binaryPath, "serve", "--validate-config", "--config", join(dir, "c.json")], {
      env: bareEnv,
    });
    expect(bad.exitCode).not.toBe(0);
    const err = bad.stderr.toString();
    expect(err).toContain("upstream.retry.max_attempts");
    expect(err).toContain("listen");
    const good = Bun.spawnSync([binaryPath, "serve", "--validate-config"], { env: bareEnv });
    expect(good.exitCode).toBe(0);
  });

  test("upstream timings: the replaced timeout_ms and contradicting values are refused at start-up (exit 2), naming the key", () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-cfg-"));
    const cases: [upstream: Record<string, unknown>, says: string[]][] = [
      [{ timeout_ms: 120_000 }, ["upstream.timeout_ms", "upstream.idle_timeout_ms", "upstream.deadline_ms"]],
      [{ deadline_ms: -1 }, ["upstream.deadline_ms"]],
      [
        { deadline_ms: 60_000, idle_timeout_ms: 90_000, retry: { max_wait_ms: 30_000 } },
        ["upstream.idle_timeout_ms"],
      ],
      [{ deadline_ms: 60_000, idle_timeout_ms: 30_000 }, ["upstream.retry.max_wait_ms"]],
    ];
    for (const [i, [upstream, says]] of cases.entries()) {
      const file = join(dir, `c${i}.json`);
      writeFileSync(file, JSON.stringify({ upstream }));
      for (const args of [["--validate-config"], ["--listen", "127.0.0.1:0"]]) {
        const run = Bun.spawnSync([binaryPath, "serve", ...args, "--config", file], {
          env: bareEnv,
          timeout: 10_000,
        });
        const err = run.stderr.toString();
        expect({ args, upstream, exit: run.exitCode }).toEqual({ args, upstream, exit: 2 });
        for (const word of says) expect(err).toContain(word);
      }
    }
  });

  test("an unknown flag and a secret passed as a flag are refused", () => {
    const run = Bun.spawnSync([binaryPath, "serve", "--upstream-api-key", "sk-nope"], { env: bareEnv });
    expect(run.exitCode).toBe(2);
    expect(run.stderr.toString()).toContain("upstream-api-key");
  });

  test("starts on embedded defaults (announced demo model), answers health, exits 0 on SIGTERM", async () => {
    const sidecar = await startSidecarProcess({ args: ["--default-episode"] });
    // The default episode's lines follow the "listening on" banner the start-up waits for.
    for (let waited = 0; !sidecar.output().includes("MCP bearer token") && waited < 5_000; waited += 20)
      await Bun.sleep(20);
    expect(sidecar.output()).toContain("DEMO MODEL");
    expect(sidecar.output()).toContain("default episode ep_");
    const health = await fetch(`${sidecar.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: "ok", demo_upstream: true });
    expect(await sidecar.stop("SIGTERM")).toBe(0);
    expect(sidecar.output()).toContain("shutdown complete");
  });
});
