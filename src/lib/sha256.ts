import type { FrameText } from "./known-frame.ts";
import { knownFact, type TextHold } from "./known-texts.ts";

/** The SHA-256 of bytes (a string: of its UTF-8) as 64 lowercase hex characters (Bun's native hasher). */
export function sha256Hex(bytes: Uint8Array | string): string {
  return new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
}

/**
 * The SHA-256 of the bytes a base64 text decodes to (the same digest as `sha256Hex`
 * of them), without those bytes ever being a JavaScript buffer: the native hasher
 * decodes as it reads. A camera history resends every frame on every turn, and
 * decoding each one only to hash it made ~60 MB of garbage per 100-frame request.
 * The caller has checked the text is base64 (the hasher, like Buffer, skips what is not).
 */
export function sha256OfBase64(base64: FrameText, texts?: TextHold): string {
  // A frame resent every turn is hashed once, given the request's hold (known-texts.ts).
  return knownFact(texts, base64, "sha256_of_base64", (text) =>
    new Bun.CryptoHasher("sha256").update(text, "base64").digest("hex"),
  );
}
