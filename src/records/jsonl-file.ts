/**
 * Append-only JSON-lines files. Each line is written with one synchronous
 * append, so a crash leaves a readable prefix; a torn last line (kill -9 in the
 * middle of a write) is detected on read and reported, never fatal.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";

export function appendJsonLine(path: string, value: unknown): void {
  appendFileSync(path, `${JSON.stringify(value)}\n`);
}

export type JsonlContents<T = unknown> = {
  entries: T[];
  /** The unparseable last line, when the file ends in the middle of a write. */
  tornTail: string | undefined;
};

export function readJsonLines<T = unknown>(path: string): JsonlContents<T> {
  if (!existsSync(path)) return { entries: [], tornTail: undefined };
  const text = readFileSync(path, "utf8");
  const lines = text.split("\n");
  const last = lines.pop() ?? "";
  const entries: T[] = [];
  for (const [i, line] of lines.entries()) {
    if (line === "") continue;
    try {
      entries.push(JSON.parse(line) as T);
    } catch {
      // Only the final line may be torn; anything earlier means the file was edited or corrupted.
      if (i === lines.length - 1 && last === "") return { entries, tornTail: line };
      throw new Error(`${path}: line ${i + 1} is not JSON`);
    }
  }
  return { entries, tornTail: last === "" ? undefined : last };
}
