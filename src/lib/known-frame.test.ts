/**
 * A known frame's text is rebuilt from its blob only when it matches the identity the
 * text arrived with: the same length and the same SHA-256; any other blob is refused. A
 * blob gone from disk since the frame was kept, or one that no longer reads back (set aside),
 * is a retryable error saying so.
 */
import { describe, expect, test } from "bun:test";
import { KnownFrame } from "./known-frame.ts";
import { sha256Hex } from "./sha256.ts";
import { sidecarErrorOf } from "./sidecar-error-of.ts";

const bytes = new Uint8Array(Array.from({ length: 3000 }, (_, i) => (i * 7) % 256));
const text = Buffer.from(bytes).toString("base64");

function frameFrom(blobBytes: Uint8Array): { frame: KnownFrame; materialised: () => number } {
  let materialised = 0;
  const frame = new KnownFrame(
    { digest: sha256Hex(text), values: new Map() },
    text.length,
    { blob: "b", head: "", prefix: text.slice(0, 128) },
    { onDisk: () => true, read: () => blobBytes, setAside: () => {} },
    { reused: () => {}, materialised: () => materialised++ },
  );
  return { frame, materialised: () => materialised };
}

describe("KnownFrame.text", () => {
  test("rebuilds the text it arrived as from its blob, and counts it", () => {
    const { frame, materialised } = frameFrom(bytes);
    expect(frame.text()).toBe(text);
    expect(`${frame}`).toBe(text);
    expect(materialised()).toBe(2);
  });

  test("refuses a blob whose base64 is not the text that arrived, even of the same length", () => {
    const changed = bytes.slice();
    changed[1500] = (changed[1500] ?? 0) ^ 1;
    expect(() => frameFrom(changed).frame.text()).toThrow("is not the one received");
    expect(() => frameFrom(bytes.slice(3)).frame.text()).toThrow("is not the one received");
  });
});

describe("KnownFrame.bytes", () => {
  /** A frame over a blob that cannot be read: gone from disk, or still there but damaged. */
  const frameOver = (onDisk: boolean) => {
    const setAside: string[] = [];
    const frame = new KnownFrame(
      { digest: sha256Hex(text), values: new Map() },
      text.length,
      { blob: "b", head: "", prefix: text.slice(0, 128) },
      {
        onDisk: () => onDisk && setAside.length === 0,
        read: () => {
          throw new Error(
            onDisk ? "blob sha256:b in /data/blobs is damaged" : "blob sha256:b is missing from /data/blobs",
          );
        },
        setAside: (digest) => setAside.push(digest),
      },
    );
    return { frame, setAside };
  };

  test("a blob removed since the frame was kept: retryable, named by its digest, no path", () => {
    const { frame, setAside } = frameOver(false);
    const error = sidecarErrorOf(() => frame.text());
    expect({ kind: error.kind, status: error.status, retryable: error.retryable }).toEqual({
      kind: "unavailable",
      status: 503,
      retryable: true,
    });
    expect(error.message).toContain("(sha256:b) was removed");
    expect(error.message).not.toContain("/data");
    expect(setAside).toEqual([]);
  });

  test("a blob still on disk that does not read back: set aside, retryable, named by its digest, no path", () => {
    const { frame, setAside } = frameOver(true);
    const error = sidecarErrorOf(() => frame.bytes());
    expect({ kind: error.kind, retryable: error.retryable }).toEqual({
      kind: "unavailable",
      retryable: true,
    });
    expect(error.message).toContain("(sha256:b) could not be read back");
    expect(error.message).not.toContain("/data");
    expect(setAside).toEqual(["b"]);
  });
});
