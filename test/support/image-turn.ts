/**
 * The smallest Responses request that carries camera frames: one user message of
 * text and PNG images as data URLs, not streamed and not stored (the shape the
 * records and retention tests send turn after turn).
 */
export function imageTurnRequest(text: string, pngsBase64: string[]) {
  return {
    model: "ura-qwen",
    stream: false,
    store: false,
    input: [
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text },
          ...pngsBase64.map((png) => ({ type: "input_image", image_url: `data:image/png;base64,${png}` })),
        ],
      },
    ],
  };
}
