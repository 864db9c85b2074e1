/**
 * How wide the engine holds a string (one byte a character, or two): a test of what the
 * episode keeps to compare with later bodies (same-width-copy.ts) asks the engine itself.
 */
import { jscDescribe } from "bun:jsc";

/** Whether the engine holds `text` one byte a character (its own description says so). */
export function oneByte(text: string): boolean {
  const described = jscDescribe(text);
  if (described.includes("8Bit:(1)")) return true;
  if (described.includes("8Bit:(0)")) return false;
  throw new Error(`no width in ${described.slice(0, 80)}`);
}
