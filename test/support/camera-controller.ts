/**
 * A robot controller with a camera (tests only): the recording controller
 * (docs/executor-api.md) whose `observe` jobs each return a new deterministic
 * camera-like PNG with sensor noise (the n-th observation is frame n; 640×480 unless
 * `frame` makes them);
 * `finish` submits. It keeps the PNGs it returned, so a test can check what
 * reached the model against them.
 */
import { cameraLikePng } from "../../src/images/synthetic-frames.ts";
import { serveRecordingExecutor } from "./recording-executor.ts";

export function serveCameraController(options: { frame?: (n: number) => Uint8Array } = {}) {
  const frame = options.frame ?? ((n: number) => cameraLikePng(640, 480, 7000 + n));
  const frames: Uint8Array[] = [];
  const controller = serveRecordingExecutor({
    receipt(job) {
      const { tool } = job.body;
      if (tool !== "observe")
        return {
          ok: true,
          content: [{ type: "text", text: `${tool} done` }],
          data: tool === "finish" ? { submitted: true } : {},
        };
      const png = frame(frames.length);
      frames.push(png);
      return {
        ok: true,
        content: [
          { type: "text", text: `Observation ${frames.length}: the front camera.` },
          { type: "image", data: png.toBase64(), mimeType: "image/png" },
        ],
        data: { observation: frames.length },
      };
    },
  });
  return { ...controller, frames };
}
