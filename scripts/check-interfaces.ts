/**
 * Fails when a file under src/ (or the test support, benches and scripts beside it) exports a type that is only the return type
 * of its factory (`export type X = ReturnType<typeof createX>`, awaited or not): a
 * public object has a declared interface, written first, so a reader sees its shape
 * without reading the factory, and the factory cannot widen it by accident.
 *   bun scripts/check-interfaces.ts    (make check)
 */
import { join } from "node:path";
import { Glob } from "bun";

const root = join(import.meta.dir, "..");

/** The names of the types a source exports as a factory's return type. */
export function factoryReturnTypes(source: string): string[] {
  const pattern = /^export type (\w+)(?:<[^=]*>)?\s*=\s*(?:Awaited<\s*)?ReturnType<typeof\b/gm;
  return [...source.matchAll(pattern)].map((match) => match[1] ?? "");
}

if (import.meta.main) {
  const found: string[] = [];
  for await (const path of new Glob("{src,test,bench,scripts}/**/*.{ts,tsx}").scan(root)) {
    if (/\.test\.tsx?$/.test(path)) continue;
    for (const name of factoryReturnTypes(await Bun.file(join(root, path)).text()))
      found.push(
        `${path}: ${name} is ReturnType<typeof …>; declare an interface and have the factory return it`,
      );
  }
  for (const line of found) console.error(line);
  if (found.length > 0) process.exit(1);
}
