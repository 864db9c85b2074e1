/** The SHA-256 of bytes as 64 lowercase hex characters (Bun's native hasher). */
export function sha256Hex(bytes: Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
}
