import { describe, expect, test } from "bun:test";
import { findImages } from "./find-images.ts";

describe("findImages", () => {
  test("finds every protocol's image form in document order, with decoded sizes", () => {
    const body = {
      input: [{ type: "input_image", image_url: "data:image/png;base64,AAAA" }],
      messages: [
        {
          content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "AAAAAA==" } }],
        },
      ],
      contents: [{ parts: [{ inlineData: { mimeType: "image/jpeg", data: "AAA=" } }] }],
      upstream: [{ image_url: { url: "data:image/webp;base64,AAAAAAAA" } }],
      stored: { $blob: `sha256:${"a".repeat(64)}`, media_type: "image/png", bytes: 41230 },
    };
    expect(findImages(body).map((i) => [i.kind, i.mediaType, i.bytes])).toEqual([
      ["inline", "image/png", 3],
      ["inline", "image/png", 4],
      ["inline", "image/jpeg", 2],
      ["inline", "image/webp", 6],
      ["blob", "image/png", 41230],
    ]);
  });

  test("text that merely mentions images is not an image", () => {
    expect(findImages({ text: "see data:image/png below", media_type: "image/png" })).toEqual([]);
  });
});
