/**
 * Size guard for the upstream request: lossless does not mean small enough.
 * Defaults are Model Studio's observed limits (6 MiB per request body, 10 MiB
 * per data URL); over a limit is a final `request_too_large` naming the limit
 * and the actual size — never a silent truncation.
 */
import { z } from "zod";
import type { HubRequest } from "../hub/schema.ts";
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

/** Throws when the serialized upstream body is over max_request_bytes. */
export function checkUpstreamSize(body: string, limits: Pick<SizeLimits, "max_request_bytes">): void {
  // A UTF-16 code unit is at most 3 bytes of UTF-8: a body well under the limit is not counted.
  if (body.length * 3 <= limits.max_request_bytes) return;
  const bodyBytes = Buffer.byteLength(body, "utf8");
  if (bodyBytes > limits.max_request_bytes) {
    throw new SidecarError(
      "request_too_large",
      `the upstream request body is ${describeBytes(bodyBytes)}, over the limit max_request_bytes = ${describeBytes(limits.max_request_bytes)}`,
    );
  }
}

/**
 * Throws when an image's data URL, as it will be sent upstream, is over
 * max_data_url_bytes. Checked on the (converted) hub request rather than the body,
 * so the error names the image's field in the client's own request.
 */
export function checkImageSizes(request: HubRequest, limits: Pick<SizeLimits, "max_data_url_bytes">): void {
  request.messages.forEach((message, i) => {
    if (message.role !== "user" && message.role !== "tool") return;
    message.content.forEach((part, j) => {
      if (part.type !== "image") return;
      // base64 and the media type are ASCII: the data URL's bytes are its length.
      const urlBytes = `data:${part.mediaType};base64,`.length + part.data.length;
      if (urlBytes <= limits.max_data_url_bytes) return;
      const param = part.source ?? `messages[${i}].content[${j}]`;
      throw new SidecarError(
        "request_too_large",
        `${param}: the image's data URL upstream is ${describeBytes(urlBytes)}, over the limit max_data_url_bytes = ${describeBytes(limits.max_data_url_bytes)}`,
        { param },
      );
    });
  });
}
