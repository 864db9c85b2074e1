/**
 * Where a worker's code is: in a compiled binary, each entry point keeps its path below
 * the build's common root in the binary's own file system (`images/…` when the entries
 * are under src/, as in the Makefile; `src/images/…` when an entry sits at the
 * repository root, as in tests), and is looked for there first, by file: a `--bytecode`
 * build reports the source file's path as `import.meta.url`, so the URL cannot tell.
 * Under `bun run`, the source file beside the module asking.
 */
import { existsSync } from "node:fs";

const embedded = "/$bunfs/root/";

/**
 * `entry`: the worker's path below src/ without its extension (`images/conversion-worker`);
 * `beside`: the asking module's `import.meta.url`. Throws in a binary built without the entry.
 */
export function workerUrl(entry: string, beside: string): URL {
  const inBinary = [`${entry}.js`, `src/${entry}.js`].find((path) => existsSync(`${embedded}${path}`));
  if (inBinary) return new URL(`file://${embedded}${inBinary}`);
  if (beside.startsWith(`file://${embedded}`))
    throw new Error(`the worker ${entry} is not in this binary (build it as an entry point)`);
  const name = entry.slice(entry.lastIndexOf("/") + 1);
  return new URL(`./${name}.ts`, beside);
}
