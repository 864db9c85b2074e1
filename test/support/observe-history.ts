/**
 * A robot episode's hub request for tests of the context stage: the opening
 * messages, then `turns` observe call/result pairs (call ids `call_0`, `call_1`, …),
 * each result's content made by `result(turn)`.
 */
import type { HubMessage, HubPart, HubRequest, HubTool } from "../../src/hub/schema.ts";

export function observeHistory(
  opening: HubMessage[],
  turns: number,
  result: (turn: number) => HubPart[],
  request: { model: string; tools?: HubTool[] },
): HubRequest {
  const messages = [...opening];
  for (let i = 0; i < turns; i++) {
    const id = `call_${i}`;
    messages.push(
      { role: "assistant", text: null, toolCalls: [{ id, name: "observe", arguments: "{}" }] },
      { role: "tool", toolCallId: id, name: "observe", content: result(i) },
    );
  }
  return { model: request.model, messages, tools: request.tools ?? [], ignored: [] };
}
