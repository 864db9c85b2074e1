/**
 * A camera history as a client resends it (tests only): noisy camera-like PNG frames, and
 * a Responses request whose input holds each frame as an observe call's output image.
 * Shared by the tests of frames known across turns (test/records/known-frame*.test.ts).
 */
import { cameraLikeFrame } from "../../src/images/synthetic-frames.ts";
import { writePng } from "../../src/images/write-png.ts";

/** A noisy 320×240 camera-like frame as base64 PNG (~190 KB); `changedPixel`: one pixel's red moved by one. */
export function cameraFrame(seed: number, changedPixel?: number): string {
  const { data } = cameraLikeFrame(320, 240, seed, 8);
  const rgb = new Uint8Array((data.length / 4) * 3);
  for (let i = 0, j = 0; i < data.length; i += 4, j += 3) rgb.set(data.subarray(i, i + 3), j);
  if (changedPixel !== undefined) rgb[changedPixel * 3] = ((rgb[changedPixel * 3] ?? 0) + 1) % 256;
  return writePng({ width: 320, height: 240, colourType: 2, bitDepth: 8, rows: rgb }).toBase64();
}

/** A Responses request body: a user's "watch", then per frame an observe call and its output (text and image). */
export function responsesCameraHistory(frames: string[], options: { stream: boolean }): string {
  return JSON.stringify({
    model: "ura-qwen",
    stream: options.stream,
    store: false,
    tools: [{ type: "function", name: "ura_observe", parameters: { type: "object", properties: {} } }],
    input: [
      { type: "message", role: "user", content: [{ type: "input_text", text: "watch" }] },
      ...frames.flatMap((data, i) => [
        { type: "function_call", call_id: `call_${i}`, name: "ura_observe", arguments: "{}" },
        {
          type: "function_call_output",
          call_id: `call_${i}`,
          output: [
            { type: "input_text", text: `frame ${i}` },
            { type: "input_image", image_url: `data:image/png;base64,${data}` },
          ],
        },
      ]),
    ],
  });
}
