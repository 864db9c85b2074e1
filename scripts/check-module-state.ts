/**
 * Fails when production code under src/ keeps mutable state at module level: a
 * top-level `let`/`var`, or a top-level `new WeakMap`/`WeakSet` or empty `Map`/`Set`
 * (a constant lookup table built with its entries is no state). Per-request data
 * travels in the request's context and per-episode data in the episode; state lives
 * in what the composition root creates. The files allowed below say why. What a
 * stage derives from an episode's frozen values is kept in the episode's memos
 * (src/lib/frozen-memos.ts).
 *   bun scripts/check-module-state.ts    (make check)
 */

import { join } from "node:path";
import { Glob } from "bun";

const root = join(import.meta.dir, "..");

/** Files that may keep module-level state, and why. */
export const allowed: Readonly<Record<string, string>> = {
  "src/main.ts": "the process's entry",
  "src/server/compose.ts": "the composition root",
  "src/images/conversion-worker.ts": "a conversion worker thread's entry: its codecs, loaded once",
  "src/lib/sha256-worker.ts":
    "the hashing worker thread's entry: the running hash of each string it is given",
};

const statePatterns = [
  /^(?:export\s+)?(?:let|var)\s+(\w+)/gm,
  /^(?:export\s+)?const\s+(\w+)\b[^=\n]*=\s*new\s+(?:WeakMap|WeakSet)\b/gm,
  /^(?:export\s+)?const\s+(\w+)\b[^=\n]*=\s*new\s+(?:Map|Set)\s*(?:<[^\n]*>)?\(\s*\)/gm,
];

/** The names of a source's module-level state. */
export function moduleStateOf(source: string): string[] {
  return statePatterns.flatMap((pattern) => [...source.matchAll(pattern)].map((match) => match[1] ?? ""));
}

if (import.meta.main) {
  const faults: string[] = [];
  for (const file of new Glob("src/**/*.{ts,tsx}").scanSync(root)) {
    if (/\.test\.tsx?$/.test(file) || file in allowed) continue;
    for (const name of moduleStateOf(await Bun.file(join(root, file)).text()))
      faults.push(`${file}: module-level state \`${name}\` (keep it in what the composition root creates)`);
  }
  for (const fault of faults.sort()) console.error(fault);
  if (faults.length > 0) process.exit(1);
}
