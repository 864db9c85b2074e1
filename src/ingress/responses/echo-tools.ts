/**
 * The offered tools as a response echoes them (`response.tools`, pure). The Open
 * Responses schema admits only function tools there, each with every key present:
 * `type, name, description (string|null), parameters (object|null), strict
 * (boolean|null)`. Clients often omit `strict` or `description`, so each tool is
 * written out in full rather than echoed as sent. A Codex namespace is echoed as
 * its member functions, each keeping `namespace` beside its name, the same
 * `{namespace, name}` pair its calls come back with.
 */
import { parseAt } from "../parse-at.ts";
import { type FunctionTool, functionToolSchema, namespaceToolSchema, type Tool } from "./schema.ts";

export type EchoedFunctionTool = {
  type: "function";
  name: string;
  namespace?: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
  strict: boolean | null;
};

function echoFunction(tool: FunctionTool, namespace?: string): EchoedFunctionTool {
  return {
    type: "function",
    name: tool.name,
    ...(namespace ? { namespace } : {}),
    description: tool.description ?? null,
    parameters: tool.parameters ?? null,
    strict: tool.strict ?? null,
  };
}

/** `offered` holds only function and namespace tools (read-tools.ts drops the rest). */
export function echoTools(offered: readonly Tool[]): EchoedFunctionTool[] {
  return offered.flatMap((raw, i) => {
    if (raw.type === "namespace") {
      const ns = parseAt(namespaceToolSchema, raw, `tools[${i}]`);
      return ns.tools.map((tool) => echoFunction(tool, ns.name));
    }
    return [echoFunction(parseAt(functionToolSchema, raw, `tools[${i}]`))];
  });
}
