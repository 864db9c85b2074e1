/**
 * One temporary root per test run, removed when the run ends. The suites create
 * hundreds of data directories (a long camera history holds hundreds of MB of
 * images), and on a machine that runs the suite again and again they used to
 * fill the disk until writes failed with ENOSPC.
 *
 * Loaded before every test file (bunfig.toml `preload`): it points TMPDIR at the
 * run's root, so `tmpdir()` in tests and in every process they start lands there,
 * and it gives the tests that must stay out of /tmp (Codex misbehaves with its home
 * there, docs/clients.md) a root under /var/tmp (`varTmp()` in var-tmp.ts).
 * URA_KEEP_TEST_TMP=1 keeps both roots for a post-mortem.
 */
import { afterAll } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAtExit } from "./exit-cleanup.ts";
import { varTmpEnv } from "./var-tmp.ts";

const roots = [mkdtempSync(join(tmpdir(), "ura-test-run-"))];
mkdirSync("/var/tmp/ura-e2e", { recursive: true });
roots.push(mkdtempSync("/var/tmp/ura-e2e/run-"));
// Also when the run is stopped by SIGINT or SIGTERM, which skips afterAll (exit-cleanup.ts).
for (const root of roots) removeAtExit(root);
process.env.TMPDIR = roots[0];
process.env[varTmpEnv] = roots[1];

// A preload's afterAll runs once, after the last test file of the run.
afterAll(() => {
  if (process.env.URA_KEEP_TEST_TMP === "1") {
    console.error(`test temporary files kept in ${roots.join(" and ")}`);
    return;
  }
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});
