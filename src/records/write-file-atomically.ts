/**
 * Writes a whole file under its final name or not at all: the bytes go to a
 * temporary file beside it, which is then renamed over the final name (rename is
 * atomic within one directory). A crash leaves either no file or the complete
 * one, never a prefix, so a name that exists can be trusted. Leftover temporary
 * files (a crash between write and rename) are recognisable by `.tmp-` and safe
 * to delete.
 */
import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";

let sequence = 0;

export function writeFileAtomically(path: string, bytes: Uint8Array): void {
  sequence += 1;
  const tmp = `${path}.tmp-${process.pid}-${sequence}`;
  const fd = openSync(tmp, "w");
  try {
    // writeSync may write less than asked (a full disk mid-write): loop until all is written.
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    // Data on disk before the name: after a power loss the name never points at a hole.
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    unlinkSync(tmp);
    throw error;
  }
  closeSync(fd);
  renameSync(tmp, path);
}
