/**
 * A one-motion episode for the scripted model (the approval tests): with a `move`
 * tool declared, it first looks (`observe`, when declared), then asks for one move;
 * once the move's result is in the conversation it answers in text, quoting that
 * result — so what the client sent back (the receipt, or the operator's rejection)
 * is in the final answer and in the upstream request before it. Requests without
 * the tool (title requests) get a title.
 */
import type { DecideReply } from "./create-scripted-upstream.ts";
import { toolNamed } from "./decide-reply.ts";

/** The arguments of the move the scripted model asks for. */
export const scriptedMove = { x: 0.25, y: -0.1 };

export function moveEpisodeReply(): DecideReply {
  return async (request) => {
    const move = toolNamed(request, "move");
    if (!move) return { kind: "text", text: "Arm motion episode" };
    const calls = request.messages.flatMap((m) => m.tool_calls ?? []);
    const observe = toolNamed(request, "observe");
    if (observe !== undefined && !calls.some((c) => c.function.name === observe))
      return { kind: "tool_calls", calls: [{ name: observe, arguments: "{}" }] };
    const call = calls.find((c) => c.function.name === move);
    if (call === undefined)
      return { kind: "tool_calls", calls: [{ name: move, arguments: JSON.stringify(scriptedMove) }] };
    const result = request.messages.find((m) => m.role === "tool" && m.tool_call_id === call.id);
    const text =
      typeof result?.content === "string" ? result.content : JSON.stringify(result?.content ?? null);
    return { kind: "text", text: `The move is over. Its result: ${text}` };
  };
}
