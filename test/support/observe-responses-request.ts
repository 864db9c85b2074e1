/**
 * A robot episode's Responses request for tests through the Responses ingress: the
 * instruction, then one `ura_observe` call per output (call ids `call_0`, `call_1`, …)
 * answered by that output (a string or a list of input parts), non-streamed, not stored.
 */
export function observeResponsesRequest(instruction: string, outputs: readonly unknown[]) {
  const input: unknown[] = [
    { type: "message", role: "user", content: [{ type: "input_text", text: instruction }] },
  ];
  outputs.forEach((output, i) => {
    input.push({ type: "function_call", call_id: `call_${i}`, name: "ura_observe", arguments: "{}" });
    input.push({ type: "function_call_output", call_id: `call_${i}`, output });
  });
  return {
    model: "ura-qwen",
    stream: false,
    store: false,
    input,
    tools: [
      { type: "function", name: "ura_observe", description: "observe", parameters: { type: "object" } },
    ],
  };
}
