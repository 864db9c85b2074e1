// OpenCode plugin: delivers the model's tool-call id to the ura MCP server.
// OpenCode's MCP `tools/call` carries no call identity, so `tool.execute.before` adds
// `_callID` to the arguments of every `ura_*` call (mutating them in place, which is
// what OpenCode sends), and `experimental.chat.messages.transform` removes `_callID`
// again from the tool-call inputs of the history, so the model never sees it.
// Loaded with `"plugin": ["file:///…/ura-call-id.ts"]` in the OpenCode config.
// Self-contained on purpose: no imports, so OpenCode needs no npm install to load it.

type ToolPart = { type: string; tool?: string; state?: { input?: Record<string, unknown> } };
type HistoryMessage = { parts: ToolPart[] };

const isUraTool = (tool: string | undefined): boolean => tool?.startsWith("ura_") === true;

export const UraCallIdPlugin = async () => ({
  "tool.execute.before": async (
    input: { tool: string; sessionID: string; callID: string },
    output: { args: Record<string, unknown> },
  ) => {
    if (isUraTool(input.tool) && output.args && typeof output.args === "object") {
      output.args._callID = input.callID;
    }
  },
  "experimental.chat.messages.transform": async (_input: unknown, output: { messages: HistoryMessage[] }) => {
    for (const message of output.messages) {
      for (const part of message.parts) {
        if (part.type === "tool" && isUraTool(part.tool) && part.state?.input) {
          delete part.state.input._callID;
        }
      }
    }
  },
});
