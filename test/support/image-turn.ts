/**
 * The smallest Responses request that carries camera frames: one user message of
 * text (when given) and PNG images as data URLs, not streamed and not stored (the
 * shape the records and retention tests and the camera benches send turn after turn).
 */
export function imageTurnRequest(text: string | undefined, pngsBase64: string[]) {
  return {
    model: "ura-qwen",
    stream: false,
    store: false,
    input: [
      {
        type: "message",
        role: "user",
        content: [
          ...(text === undefined ? [] : [{ type: "input_text", text }]),
          ...pngsBase64.map((png) => ({ type: "input_image", image_url: `data:image/png;base64,${png}` })),
        ],
      },
    ],
  };
}
