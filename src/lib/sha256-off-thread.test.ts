import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { SidecarError } from "./errors.ts";
import { sha256Hex } from "./sha256.ts";
import { createOffThreadSha256, type HashPart } from "./sha256-off-thread.ts";

const dir = mkdtempSync(join(tmpdir(), "ura-sha256-off-thread-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A worker that fails as told at its first chunk. */
function failingWorker(name: string, body: string): URL {
  const path = join(dir, `${name}.ts`);
  writeFileSync(path, `self.onmessage = () => { ${body} };\n`);
  return new URL(`file://${path}`);
}

describe("SHA-256 of strings in a worker, from the chunks they arrived in", () => {
  test("gives each string sha256Hex's digest, and every chunk back byte for byte", async () => {
    const hashing = createOffThreadSha256();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.uint8Array({ maxLength: 3000 }), { minLength: 1, maxLength: 6 }),
          fc.array(fc.nat(), { maxLength: 8 }),
          async (strings, cuts) => {
            // The strings back to back, cut into chunks anywhere; a string's first piece sometimes copied out.
            const body = new Uint8Array(Buffer.concat(strings));
            const at = [...new Set(cuts.map((cut) => cut % (body.length + 1)))].sort((a, b) => a - b);
            const bounds = [0, ...at, body.length];
            const ids = strings.map(() => hashing.nextId());
            const starts: number[] = [];
            let offset = 0;
            for (const s of strings) {
              starts.push(offset);
              offset += s.length;
            }
            const replies: Promise<unknown>[] = [];
            const digests = new Map<number, string>();
            for (let c = 0; c + 1 < bounds.length; c++) {
              const from = bounds[c] as number;
              const to = bounds[c + 1] as number;
              const chunk = body.slice(from, to);
              const parts: HashPart[] = [];
              const ends: number[] = [];
              strings.forEach((s, i) => {
                const start = starts[i] as number;
                const end = start + s.length;
                const lo = Math.max(start, from);
                const hi = Math.min(end, to);
                if (lo < hi)
                  parts.push(
                    lo === start && c % 2 === 1
                      ? { id: ids[i] as number, bytes: chunk.slice(lo - from, hi - from) }
                      : { id: ids[i] as number, from: lo - from, to: hi - from },
                  );
                if (end > from && end <= to) ends.push(ids[i] as number);
              });
              const copy = Buffer.from(chunk);
              replies.push(
                hashing.hash(chunk.buffer as ArrayBuffer, parts, ends).then((hashed) => {
                  expect(Buffer.from(hashed.buffer).equals(copy)).toBe(true);
                  for (const [id, digest] of hashed.digests) digests.set(id, digest);
                }),
              );
              expect(chunk.byteLength).toBe(0); // handed over, not copied
            }
            await Promise.all(replies);
            // An empty string (or one at the body's end) ends with no chunk of its own.
            const unended = ids.filter((id) => !digests.has(id));
            if (unended.length > 0)
              for (const [id, digest] of (await hashing.hash(new ArrayBuffer(0), [], unended)).digests)
                digests.set(id, digest);
            expect(ids.map((id) => digests.get(id))).toEqual(strings.map((s) => sha256Hex(s)));
          },
        ),
        { numRuns: 150 },
      );
      expect(hashing.started).toBe(1);
    } finally {
      hashing.close();
    }
  });

  test("a worker that dies or throws fails its chunks with a retryable error, and the next chunk starts another", async () => {
    for (const url of [
      failingWorker("exits", "process.exit(3)"),
      failingWorker("throws", 'throw new Error("boom")'),
    ]) {
      const hashing = createOffThreadSha256({ url });
      const failed = await hashing
        .hash(new ArrayBuffer(8), [{ id: hashing.nextId(), from: 0, to: 8 }], [])
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(failed).toBeInstanceOf(SidecarError);
      expect((failed as SidecarError).retryable).toBe(true);
      expect((failed as SidecarError).message).toContain("the request can be sent again");
      const again = await hashing.hash(new ArrayBuffer(8), [], []).catch((error: unknown) => error);
      expect(again).toBeInstanceOf(SidecarError);
      expect(hashing.started).toBe(2);
      hashing.close();
    }
  });

  test("a worker that holds chunks and answers none is taken as failed: its chunks fail, never hang", async () => {
    const hashing = createOffThreadSha256({ url: failingWorker("silent", ""), stallMs: 50 });
    const failed = await hashing.hash(new ArrayBuffer(8), [], []).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(SidecarError);
    expect((failed as SidecarError).message).toContain("answered nothing for 50 ms");
    hashing.close();
  });

  test("a worker that sat idle is stopped; the next chunk starts another", async () => {
    const hashing = createOffThreadSha256({ idleMs: 20 });
    try {
      const id = hashing.nextId();
      const first = await hashing.hash(Uint8Array.of(1, 2, 3).buffer, [{ id, from: 0, to: 3 }], [id]);
      expect(first.digests).toEqual([[id, sha256Hex(Uint8Array.of(1, 2, 3))]]);
      await Bun.sleep(80);
      await hashing.hash(new ArrayBuffer(1), [], []);
      expect(hashing.started).toBe(2);
    } finally {
      hashing.close();
    }
  });
});
