/**
 * The WASM codecs work inside a `bun build --compile` binary run alone from an empty
 * directory (no node_modules next to it), on the main thread and in conversion Workers
 * (the worker is an extra entry point of the build): the .wasm files are embedded and
 * loaded from the binary's own file system.
 */
import { afterAll, expect, test } from "bun:test";
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const repo = join(import.meta.dir, "..");
const buildDir = mkdtempSync(join(tmpdir(), "ura-images-build-"));
const runDir = mkdtempSync(join(tmpdir(), "ura-images-run-"));
afterAll(() => {
  rmSync(buildDir, { recursive: true, force: true });
  rmSync(runDir, { recursive: true, force: true });
});

test(
  "a compiled binary converts PNGs to pixel-identical WebP from an empty directory",
  () => {
    const built = Bun.spawnSync(
      [
        process.execPath,
        "build",
        "--compile",
        "--no-compile-autoload-dotenv",
        "--no-compile-autoload-bunfig",
        join(import.meta.dir, "fixtures-images/compiled-entry.ts"),
        join(repo, "src/images/conversion-worker.ts"),
        "--outfile",
        join(buildDir, "images-smoke"),
      ],
      { cwd: repo, stderr: "pipe", stdout: "pipe" },
    );
    expect(built.exitCode, built.stderr.toString()).toBe(0);
    copyFileSync(join(buildDir, "images-smoke"), join(runDir, "images-smoke"));
    expect(readdirSync(runDir)).toEqual(["images-smoke"]);
    chmodSync(join(runDir, "images-smoke"), 0o755);

    const run = Bun.spawnSync([join(runDir, "images-smoke")], {
      cwd: runDir,
      env: { PATH: "/usr/bin:/bin", HOME: runDir },
      stderr: "pipe",
      stdout: "pipe",
    });
    expect(run.exitCode, run.stderr.toString()).toBe(0);
    const report = JSON.parse(run.stdout.toString()) as {
      cwd: string;
      converted: number;
      warmUp: { warmUpMs: number; instantiateMs: number[] };
      results: { kind: string; mediaType: string; pixelsEqual: boolean }[];
    };
    expect(report.cwd).toBe(runDir);
    expect(report.converted).toBe(4);
    // Both workers instantiated the codecs compiled inside the binary, and one warm-up
    // conversion of the embedded frame ran.
    expect(report.warmUp.instantiateMs.length).toBe(2);
    expect(report.warmUp.warmUpMs).toBeGreaterThan(0);
    expect(report.results.map((r) => [r.kind, r.mediaType, r.pixelsEqual])).toEqual([
      ["rgb-noise-64x48", "image/webp", true],
      ["rgba-transparent-33x17", "image/webp", true],
      ["grey4-20x20", "image/webp", true],
      ["palette8-15x9", "image/webp", true],
    ]);
  },
  { timeout: 120_000 },
);
