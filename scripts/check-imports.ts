/**
 * Fails when an import points the wrong way: a production file under src/ (any but
 * a `*.test.ts`) importing from a layer above its own or beside it (layers.ts), or
 * importing test support (test/, fixtures/, bench/, bun:test). Type-only imports
 * count: a type two layers share lives in the lower one. Reads the import
 * statements as text, so it runs in a second, before anything is built.
 *   bun scripts/check-imports.ts    (make check)
 */

import { dirname, join, relative } from "node:path";
import { Glob } from "bun";
import { layers, testOnly } from "./layers.ts";

const root = join(import.meta.dir, "..");
const isTest = (path: string) => /\.test\.tsx?$/.test(path);

/** The module specifiers of a file's static imports and re-exports, and of its import() calls. */
export function importsOf(source: string): string[] {
  const specifiers: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']/gm,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns)
    for (const match of source.matchAll(pattern)) specifiers.push(match[1] ?? "");
  return specifiers;
}

/** The layer entry (folder or file) a repository path belongs to, and that layer's index (0 = top). */
export function placeOf(path: string): { entry: string; floor: number } | undefined {
  let best: { entry: string; floor: number } | undefined;
  layers.forEach((floor, index) => {
    for (const entry of floor)
      if (
        (path === entry || (entry.endsWith("/") && path.startsWith(entry))) &&
        entry.length > (best?.entry.length ?? 0)
      )
        best = { entry, floor: index };
  });
  return best;
}

/** What is wrong with one import of a production file, if anything. */
export function faultOf(file: string, specifier: string): string | undefined {
  const target = specifier.startsWith(".") ? relative(root, join(root, dirname(file), specifier)) : specifier;
  if (testOnly.some((prefix) => target === prefix || target.startsWith(prefix)))
    return `${file} imports ${target}: production code never imports test support`;
  if (!target.startsWith("src/")) return undefined;
  const from = placeOf(file);
  const to = placeOf(target);
  if (!from) return `${file} is in no layer: give its folder a place in scripts/layers.ts`;
  if (!to) return `${target} is in no layer: give its folder a place in scripts/layers.ts`;
  if (from.entry === to.entry || to.floor > from.floor) return undefined;
  const where = to.floor === from.floor ? "beside" : "above";
  return `${file} imports ${target}: ${to.entry} is ${where} ${from.entry} (scripts/layers.ts)`;
}

if (import.meta.main) {
  const faults: string[] = [];
  for (const file of new Glob("src/**/*.{ts,tsx}").scanSync(root)) {
    if (isTest(file)) continue;
    const source = await Bun.file(join(root, file)).text();
    for (const specifier of importsOf(source)) {
      const fault = faultOf(file, specifier);
      if (fault) faults.push(fault);
    }
  }
  for (const fault of new Set(faults.sort())) console.error(fault);
  if (faults.length > 0) {
    console.error(`${faults.length} import(s) point the wrong way`);
    process.exit(1);
  }
}
