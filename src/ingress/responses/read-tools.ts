/**
 * The tools a Responses request declares, sorted into what Qwen is offered and
 * what is dropped (and recorded). Function tools are offered as they are. Codex
 * declares MCP tools as namespaces (`{type:"namespace", name:"mcp__ura", tools:[…]}`)
 * and must see the model's call come back as `{namespace, name}`: a namespace is
 * flattened to `<namespace>__<name>` for Qwen (`mcp__ura__observe`, the name the
 * ledger already maps to the manifest tool) and mapped back in the response.
 *
 * Offered namespaces are the MCP servers Codex connects to (`mcp__*`). Codex's own
 * namespaces (`multi_agent_v1`: spawning and steering sub-agents, which would start
 * model sessions outside the episode) and the provider's built-in tools
 * (`web_search`, …), which Qwen cannot run, are not offered; the dropping is
 * noted as ignored. Refusing them would make Codex unusable: it declares them
 * on every request. An unknown tool type is a 400.
 */
import type { HubTool } from "../../hub/schema.ts";
import { invalidField } from "../../lib/errors.ts";
import { deriveOnce } from "../../lib/frozen-json.ts";
import type { FrozenMemos } from "../../lib/frozen-memos.ts";
import { createIgnoredFields, type IgnoredFields } from "../ignored-fields.ts";
import { parseAt } from "../parse-at.ts";
import { type FunctionTool, functionToolSchema, namespaceToolSchema, type Tool } from "./schema.ts";

/** How a model-visible (flattened) name maps back to what the client declared. */
export type DeclaredName = { name: string; namespace?: string };

export type ReadTools = {
  hub: HubTool[];
  /** The declared tools that were offered, as the client wrote them (echoed in the response). */
  offered: Tool[];
  /** Flattened name → declared name and namespace. */
  names: Map<string, DeclaredName>;
};

/** Provider built-in tools: run by OpenAI's servers, which Qwen cannot do. */
const builtInTypes = new Set([
  "web_search",
  "web_search_preview",
  "web_search_preview_2025_03_11",
  "web_search_2025_08_26",
  "file_search",
  "code_interpreter",
  "image_generation",
  "computer",
  "computer_use_preview",
  "mcp",
  "local_shell",
  "shell",
  "apply_patch",
  "custom",
  "tool_search",
]);

export function flattenName(namespace: string | null | undefined, name: string): string {
  return namespace ? `${namespace}__${name}` : name;
}

/** Namespaces offered to the model: the client's MCP servers. */
export function isOfferedNamespace(namespace: string): boolean {
  return namespace.startsWith("mcp__");
}

function toHubTool(tool: FunctionTool, name: string): HubTool {
  return {
    name,
    description: tool.description ?? "",
    parameters: tool.parameters ?? { type: "object", properties: {} },
  };
}

/** A repeated tool list (frozen) is read once, its notes kept to be noted again on every turn. */
function readToolsWithNotes(tools: readonly Tool[]): { read: ReadTools; notes: string[] } {
  const notes = createIgnoredFields();
  return { read: readTools(tools, notes), notes: notes.list() };
}

/**
 * readTools, done once per tool list a client repeats verbatim (frozen, kept in the
 * episode's memos): the same hub tools then key the upstream body's reuse of their JSON.
 */
export function readDeclaredTools(
  tools: readonly Tool[],
  ignored: IgnoredFields,
  memos?: FrozenMemos,
): ReadTools {
  const { read, notes } = deriveOnce(memos, readToolsWithNotes, tools);
  for (const note of notes) ignored.add(note);
  return read;
}

/** Sorts the declared tools; what is not offered is noted in `ignored`. */
export function readTools(tools: readonly Tool[], ignored: IgnoredFields = createIgnoredFields()): ReadTools {
  const out: ReadTools = { hub: [], offered: [], names: new Map() };
  const add = (tool: FunctionTool, namespace: string | undefined, param: string) => {
    const flat = flattenName(namespace, tool.name);
    if (out.names.has(flat)) throw invalidField(param, `duplicate tool name ${JSON.stringify(flat)}`);
    out.names.set(flat, namespace ? { name: tool.name, namespace } : { name: tool.name });
    out.hub.push(toHubTool(tool, flat));
    if (tool.strict)
      ignored.add(
        `${param}.strict: Qwen does not enforce strict schemas; arguments are still validated as JSON`,
      );
  };
  tools.forEach((raw, i) => {
    const param = `tools[${i}]`;
    if (raw.type === "function") {
      add(parseAt(functionToolSchema, raw, param), undefined, `${param}.name`);
      out.offered.push(raw);
    } else if (raw.type === "namespace") {
      const ns = parseAt(namespaceToolSchema, raw, param);
      if (!isOfferedNamespace(ns.name)) {
        ignored.add(
          `${param}: namespace ${ns.name} (${ns.tools.map((t) => t.name).join(", ")}) not offered: only MCP server namespaces (mcp__*) are`,
        );
        return;
      }
      ns.tools.forEach((tool, j) => {
        add(tool, ns.name, `${param}.tools[${j}].name`);
      });
      out.offered.push(raw);
    } else if (builtInTypes.has(raw.type)) {
      ignored.add(`${param}: built-in tool ${raw.type} not offered (Qwen cannot provide it)`);
    } else {
      throw invalidField(`${param}.type`, `unsupported tool type ${JSON.stringify(raw.type.slice(0, 80))}`);
    }
  });
  return out;
}
