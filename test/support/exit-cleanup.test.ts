/**
 * A bench killed by a signal mid-run leaves no child process and no temporary directory
 * (exit-cleanup.ts): the stand-in bench (hold-bench-resources.ts) is stopped by SIGINT
 * and by SIGTERM once its sidecar and upstream are running; it exits as the signal
 * would have ended it, its children are gone and its directories removed.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { constants } from "node:os";
import { resolve } from "node:path";

const script = resolve(import.meta.dir, "hold-bench-resources.ts");

/** Whether `pid` is a live process (a zombie, dead but not yet reaped, is not). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

for (const signal of ["SIGINT", "SIGTERM"] as const)
  test(`a bench stopped by ${signal} mid-run leaves no process and no directory`, async () => {
    const proc = Bun.spawn([process.execPath, script], { stdout: "pipe", stderr: "ignore" });
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
    let out = "";
    while (!out.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
    const held = JSON.parse(out) as { pids: number[]; dirs: string[] };
    expect(held.pids.every(alive)).toBe(true);
    expect(held.dirs.every((dir) => existsSync(dir))).toBe(true);

    try {
      proc.kill(signal);
      expect(await proc.exited).toBe(128 + constants.signals[signal]);
      // The killed children are reaped by whoever adopted them: give that a moment.
      const deadline = Date.now() + 5_000;
      while (held.pids.some(alive) && Date.now() < deadline) await Bun.sleep(50);
      expect(held.pids.filter(alive)).toEqual([]);
      expect(held.dirs.filter((dir) => existsSync(dir))).toEqual([]);
    } finally {
      // What a failure left behind must not outlive the test.
      for (const pid of held.pids.filter(alive)) process.kill(pid, "SIGKILL");
    }
  });
