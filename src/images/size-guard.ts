/**
 * Size guard for the serialized upstream request: lossless does not mean small
 * enough. Defaults are Model Studio's observed limits (6 MiB per request body,
 * 10 MiB per data URL); over a limit is a final `request_too_large` naming the limit
 * and the actual size — never a silent truncation.
 */
import { z } from "zod";
import { SidecarError } from "../lib/errors.ts";

const MiB = 1024 * 1024;

export const sizeLimitsSchema = z.object({
  max_request_bytes: z
    .number()
    .int()
    .positive()
    .default(6 * MiB),
  max_data_url_bytes: z
    .number()
    .int()
    .positive()
    .default(10 * MiB),
  /**
   * Largest PNG (width × height) decoded for conversion. The header is read first:
   * a small, highly compressed PNG can claim a size whose pixels fill gigabytes.
   */
  max_image_pixels: z.number().int().positive().default(50_000_000),
});
export type SizeLimits = z.infer<typeof sizeLimitsSchema>;

function describeBytes(bytes: number): string {
  return bytes >= MiB ? `${bytes} bytes (${(bytes / MiB).toFixed(2)} MiB)` : `${bytes} bytes`;
}

/** Every string starting with `data:` in a JSON value, with its JSON path. */
function* dataUrls(value: unknown, path: string): Generator<{ path: string; url: string }> {
  if (typeof value === "string") {
    if (value.startsWith("data:")) yield { path, url: value };
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) yield* dataUrls(value[i], `${path}[${i}]`);
  } else if (value !== null && typeof value === "object") {
    for (const [key, child] of Object.entries(value)) yield* dataUrls(child, path ? `${path}.${key}` : key);
  }
}

/**
 * Throws when the body or one of its data URLs is over its limit; returns the body size.
 * A data URL can only be over its limit when the whole body is, so the body is parsed
 * to look at them only then (the common case costs one byte count).
 */
export function checkUpstreamSize(
  body: string,
  limits: Pick<SizeLimits, "max_request_bytes" | "max_data_url_bytes">,
): { bodyBytes: number } {
  const bodyBytes = Buffer.byteLength(body, "utf8");
  if (bodyBytes > limits.max_data_url_bytes) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
    for (const { path, url } of dataUrls(parsed, "")) {
      const urlBytes = Buffer.byteLength(url, "utf8");
      if (urlBytes > limits.max_data_url_bytes) {
        throw new SidecarError(
          "request_too_large",
          `the image data URL at ${path} is ${describeBytes(urlBytes)}, over the limit max_data_url_bytes = ${describeBytes(limits.max_data_url_bytes)}`,
        );
      }
    }
  }
  if (bodyBytes > limits.max_request_bytes) {
    throw new SidecarError(
      "request_too_large",
      `the upstream request body is ${describeBytes(bodyBytes)}, over the limit max_request_bytes = ${describeBytes(limits.max_request_bytes)}`,
    );
  }
  return { bodyBytes };
}
