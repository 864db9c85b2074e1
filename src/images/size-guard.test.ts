import { expect, test } from "bun:test";
import { SidecarError } from "../lib/errors.ts";
import { sidecarErrorOf } from "../lib/sidecar-error-of.ts";
import { checkImageSizes, checkUpstreamSize, sizeLimitsSchema } from "./size-guard.ts";

const body = (url: string, text = "hi") =>
  JSON.stringify({
    model: "qwen",
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text },
          { type: "image_url", image_url: { url } },
        ],
      },
    ],
  });

const errorOf = sidecarErrorOf;

test("defaults are 6 MiB per body, 10 MiB per data URL, 50 megapixels per PNG", () => {
  expect(sizeLimitsSchema.parse({})).toEqual({
    max_request_bytes: 6 * 1024 * 1024,
    max_data_url_bytes: 10 * 1024 * 1024,
    max_image_pixels: 50_000_000,
  });
});

test("a body of exactly max_request_bytes passes, one byte more does not (UTF-8 bytes counted near the limit)", () => {
  for (const text of ["é", "😀 ✓", "x"]) {
    const b = body("data:image/webp;base64,AAAA", text.repeat(200));
    const bytes = Buffer.byteLength(b);
    expect(() => checkUpstreamSize(b, { max_request_bytes: bytes })).not.toThrow();
    expect(() => checkUpstreamSize(b, { max_request_bytes: bytes - 1 })).toThrow(SidecarError);
  }
});

test("a body over max_request_bytes names the limit and the size", () => {
  const b = body("data:image/webp;base64,AAAA", "x".repeat(500));
  const error = errorOf(() => checkUpstreamSize(b, { max_request_bytes: 200 }));
  expect(error.kind).toBe("request_too_large");
  expect(error.retryable).toBe(false);
  expect(error.message).toContain("max_request_bytes = 200 bytes");
  expect(error.message).toContain(`${Buffer.byteLength(b)} bytes`);
});

test("counts UTF-8 bytes, not string length", () => {
  const b = body("data:,", "é".repeat(100));
  expect(() => checkUpstreamSize(b, { max_request_bytes: b.length + 50 })).toThrow(SidecarError);
});

test("an image over max_data_url_bytes names the client's field, the limit and its size", () => {
  const data = "A".repeat(300);
  const image = (source?: string) => ({
    type: "image" as const,
    mediaType: "image/webp",
    data,
    ...(source ? { source } : {}),
  });
  const request = (source?: string) => ({
    model: "m",
    messages: [
      { role: "user" as const, content: [{ type: "text" as const, text: "hi" }] },
      { role: "tool" as const, toolCallId: "c1", name: "observe", content: [image(source)] },
    ],
    tools: [],
    ignored: [],
  });
  const limits = { max_data_url_bytes: 100 };
  const error = errorOf(() => checkImageSizes(request("input[2].output[0].image_url"), limits));
  expect(error.kind).toBe("request_too_large");
  expect(error.param).toBe("input[2].output[0].image_url");
  expect(error.message).toStartWith("input[2].output[0].image_url: ");
  expect(error.message).toContain(`is ${"data:image/webp;base64,".length + data.length} bytes`);
  expect(error.message).toContain("max_data_url_bytes = 100 bytes");
  // Without a client field (an image the sidecar made) the hub position is named.
  expect(errorOf(() => checkImageSizes(request(), limits)).param).toBe("messages[1].content[0]");
  expect(() => checkImageSizes(request(), { max_data_url_bytes: 400 })).not.toThrow();
});

test("large limits are reported in MiB too", () => {
  const b = body(`data:image/webp;base64,${"A".repeat(7 * 1024 * 1024)}`);
  const error = errorOf(() => checkUpstreamSize(b, sizeLimitsSchema.parse({})));
  expect(error.message).toMatch(
    /is \d+ bytes \(7\.00 MiB\), over the limit max_request_bytes = 6291456 bytes \(6\.00 MiB\)/,
  );
});
