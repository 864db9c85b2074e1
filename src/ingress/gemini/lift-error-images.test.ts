import { describe, expect, test } from "bun:test";
import { rgbNoisePng } from "../../images/generate-png.ts";
import { liftErrorImages } from "./lift-error-images.ts";

const frame = Buffer.from(rgbNoisePng(64, 48).png).toString("base64");
const call = { name: "record", args: { nonce: "n1 with response: tricky" } };
/** The string Gemini CLI 0.x builds for a failed MCP result (McpTool: "reported tool error"). */
function geminiError(content: unknown[]): string {
  const parts = [{ functionResponse: { name: "record", response: { error: { content, isError: true } } } }];
  return `MCP tool 'record' reported tool error for function call: ${JSON.stringify(call)} with response: ${JSON.stringify(parts)}`;
}

describe("images lifted out of Gemini CLI's failed-tool error text", () => {
  test("each image block becomes an image part; the text keeps everything else, with a placeholder", () => {
    const error = geminiError([
      { type: "text", text: "record refused: nonce mismatch" },
      { type: "image", data: frame, mimeType: "image/png" },
    ]);
    const lifted = liftErrorImages(error);
    expect(lifted.images).toEqual([{ type: "image", mediaType: "image/png", data: frame }]);
    expect(lifted.text).not.toContain(frame);
    expect(lifted.text).toStartWith(
      `MCP tool 'record' reported tool error for function call: ${JSON.stringify(call)}`,
    );
    expect(lifted.text).toContain("record refused: nonce mismatch");
    expect(lifted.text).toContain('"data":"<image 1, sent to the model as an image>"');
    expect(lifted.note).toContain("1 image(s) lifted");
  });

  test("a text-only failure passes unchanged, with no note", () => {
    const error = geminiError([{ type: "text", text: "no such nonce" }]);
    expect(liftErrorImages(error)).toEqual({ text: error, images: [] });
  });

  test("an unreadable result (cut short) loses its base64 to an explicit omission notice, never forwarded as text", () => {
    const cut = geminiError([{ type: "image", data: frame, mimeType: "image/png" }]).slice(0, -40);
    const lifted = liftErrorImages(cut);
    expect(lifted.images).toEqual([]);
    expect(lifted.text).not.toMatch(/[A-Za-z0-9+/]{256,}/);
    expect(lifted.text).toMatch(/\[image data omitted: \d+ base64 characters inside a failed tool result/);
    expect(lifted.note).toContain("omission notice");
  });
});
