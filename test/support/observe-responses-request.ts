/**
 * A robot episode's Responses input for tests through the Responses ingress: the
 * instruction, then one `ura_observe` call per output (call ids `call_0`, `call_1`, …)
 * answered by that output (a string or a list of input parts); and the request that
 * carries it, non-streamed, not stored, offering the observe tool.
 */

/** The user's instruction (its message content: a string or input parts), then the observe call/result pairs. */
export function observeInput(instruction: unknown, outputs: readonly unknown[]): unknown[] {
  const input: unknown[] = [{ type: "message", role: "user", content: instruction }];
  outputs.forEach((output, i) => {
    input.push({ type: "function_call", call_id: `call_${i}`, name: "ura_observe", arguments: "{}" });
    input.push({ type: "function_call_output", call_id: `call_${i}`, output });
  });
  return input;
}

/** An observation's result: its text `frame N` and the frame as a PNG data URL. */
export const frameOutput = (turn: number, pngBase64: string | undefined) => [
  { type: "input_text", text: `frame ${turn}` },
  { type: "input_image", image_url: `data:image/png;base64,${pngBase64}` },
];

/** The request: `observeInput` with the instruction as one input_text part. */
export function observeResponsesRequest(instruction: string, outputs: readonly unknown[]) {
  return {
    model: "ura-qwen",
    stream: false,
    store: false,
    input: observeInput([{ type: "input_text", text: instruction }], outputs),
    tools: [
      { type: "function", name: "ura_observe", description: "observe", parameters: { type: "object" } },
    ],
  };
}
