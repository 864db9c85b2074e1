/**
 * The camera histories the long-episode benches send, the way the real clients
 * resend them: a user instruction, then per turn one observe call and its result
 * (a line of text and one PNG frame), the whole history in every request.
 * Responses (`function_call` / `function_call_output` items) and Gemini
 * (`functionCall` / `functionResponse` + `inlineData` contents) shapes.
 * Each turn's items are serialised once when the history is made and only the
 * needed prefix is joined per request: turn 100 of a 100-turn episode does not
 * re-stringify 99 frames of ~400 KB, and the history holds no second copy of the frames.
 */

/** The request body of the first `turns` turns (1-based) of a history. */
export type CameraHistory = (turns: number) => string;

const instruction = "Watch the table and observe on every turn.";
const observation = (turn: number) => `observation ${turn}: the front camera frame.`;

/** Joins the first `turns` pre-serialised turns into the body `wrap` builds around them. */
function historyOf(items: string[], wrap: (joined: string) => string): CameraHistory {
  return (turns) => wrap(items.slice(0, turns).join(","));
}

/** Responses request bodies over `frames` (base64 PNGs, one per turn). */
export function responsesCameraHistory(frames: string[], options: { stream: boolean }): CameraHistory {
  const items = frames.map((frame, i) => {
    const call = { type: "function_call", call_id: `call_${i}`, name: "ura_observe", arguments: "{}" };
    const output = {
      type: "function_call_output",
      call_id: `call_${i}`,
      output: [
        { type: "input_text", text: observation(i) },
        { type: "input_image", image_url: `data:image/png;base64,${frame}` },
      ],
    };
    return `${JSON.stringify(call)},${JSON.stringify(output)}`;
  });
  const head = JSON.stringify({
    type: "message",
    role: "user",
    content: [{ type: "input_text", text: instruction }],
  });
  const tools = JSON.stringify([
    {
      type: "function",
      name: "ura_observe",
      description: "observe",
      parameters: { type: "object", properties: {} },
    },
  ]);
  return historyOf(
    items,
    (joined) =>
      `{"model":"ura-qwen","stream":${options.stream},"store":false,"tools":${tools},"input":[${head},${joined}]}`,
  );
}

/** Gemini GenerateContent request bodies over `frames` (base64 PNGs, one per turn). */
export function geminiCameraHistory(frames: string[]): CameraHistory {
  const items = frames.map((frame, i) => {
    const call = {
      role: "model",
      parts: [{ functionCall: { name: "mcp_ura_observe", args: {}, id: `call_${i}` } }],
    };
    const result = {
      role: "user",
      parts: [
        {
          functionResponse: {
            name: "mcp_ura_observe",
            response: { output: observation(i) },
            id: `call_${i}`,
          },
        },
        { inlineData: { mimeType: "image/png", data: frame } },
      ],
    };
    return `${JSON.stringify(call)},${JSON.stringify(result)}`;
  });
  const head = JSON.stringify({ role: "user", parts: [{ text: instruction }] });
  const tools = JSON.stringify([
    {
      functionDeclarations: [
        {
          name: "mcp_ura_observe",
          description: "observe",
          parametersJsonSchema: { type: "object", properties: {} },
        },
      ],
    },
  ]);
  return historyOf(items, (joined) => `{"contents":[${head},${joined}],"tools":${tools}}`);
}
