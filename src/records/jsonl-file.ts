/**
 * Append-only JSON-lines files. Each line is written whole (append-file.ts: a
 * short write is completed or cut back, never counted as written), so a crash
 * leaves a readable prefix of whole lines. A torn line (kill -9 or a power cut
 * in the middle of a write) is detected on read: every whole line before it is
 * kept, and it and whatever follows are reported, never fatal.
 */
import { existsSync, readFileSync } from "node:fs";
import { openAppendFile } from "./append-file.ts";

/** Appends one line whole (open, write, close); throws RecordsWriteError leaving the file as it was. */
export function appendJsonLine(path: string, value: unknown): void {
  appendTextLine(path, JSON.stringify(value));
}

/** Appends one line already formatted as JSON text (it must not contain a newline), the same way. */
function appendTextLine(path: string, line: string): void {
  const file = openAppendFile(path, { groupCommit: undefined });
  try {
    file.append(`${line}\n`);
  } finally {
    file.close();
  }
}

export type JsonlContents<T = unknown> = {
  entries: T[];
  /**
   * The text from the first line that is not JSON to the end of the file: a line
   * torn by a crash (normally the last one). Undefined when every line is whole.
   */
  tornTail: string | undefined;
  /** Lines in `tornTail` (1 when only the last line was torn); 0 without a torn tail. */
  tornLines: number;
};

export function readJsonLines<T = unknown>(path: string): JsonlContents<T> {
  if (!existsSync(path)) return { entries: [], tornTail: undefined, tornLines: 0 };
  const text = readFileSync(path, "utf8");
  const lines = text.split("\n");
  const last = lines.pop() ?? "";
  const entries: T[] = [];
  for (const [i, line] of lines.entries()) {
    if (line === "") continue;
    try {
      entries.push(JSON.parse(line) as T);
    } catch {
      const rest = [...lines.slice(i), ...(last === "" ? [] : [last])];
      return { entries, tornTail: `${rest.join("\n")}${last === "" ? "\n" : ""}`, tornLines: rest.length };
    }
  }
  return last === ""
    ? { entries, tornTail: undefined, tornLines: 0 }
    : { entries, tornTail: last, tornLines: 1 };
}
