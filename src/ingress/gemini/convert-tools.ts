/**
 * Gemini `tools` and `toolConfig` → hub tools and tool choice (pure).
 * `parametersJsonSchema` is forwarded as is, `parameters` (OpenAPI style) is
 * converted; the `wait_for_previous` property Gemini CLI adds to every tool is
 * removed (a client scheduling hint, not a model parameter). Function names are
 * unique; an allowed function name must be declared, and only one can be expressed
 * upstream.
 * A tool list the client resent (frozen) is converted once per episode: its hub tools are
 * kept with the notes the conversion made, and each later request takes the notes again
 * (a request's notes are its own), so the Chat tools and their JSON are kept by them too.
 */
import { geminiSchedulingHint as waitForPrevious } from "../../clients/private-arguments.ts";
import type { HubTool, HubToolChoice } from "../../hub/schema.ts";
import { invalidField } from "../../lib/errors.ts";
import { deepFreeze } from "../../lib/frozen-json.ts";
import type { FrozenMemos } from "../../lib/frozen-memos.ts";
import type { IgnoredFields } from "../ignored-fields.ts";
import type { FunctionDeclaration, GenerateContentRequest } from "./schema.ts";
import { toJsonSchema } from "./to-json-schema.ts";

/** Removes Gemini CLI's `wait_for_previous` property; everything else keeps its order and bytes. */
export function removeWaitForPrevious(schema: Record<string, unknown>): {
  schema: Record<string, unknown>;
  removed: boolean;
} {
  const properties = schema.properties;
  if (typeof properties !== "object" || properties === null || !(waitForPrevious in properties))
    return { schema, removed: false };
  const { [waitForPrevious]: _, ...kept } = properties as Record<string, unknown>;
  const out: Record<string, unknown> = { ...schema, properties: kept };
  if (Array.isArray(schema.required))
    out.required = schema.required.filter((name) => name !== waitForPrevious);
  return { schema: out, removed: true };
}

function convertDeclaration(
  declaration: FunctionDeclaration,
  param: string,
  note: (text: string) => void,
): HubTool {
  if (declaration.parameters && declaration.parametersJsonSchema) {
    throw invalidField(`${param}.parameters`, "give either parameters or parametersJsonSchema, not both");
  }
  const ignored: string[] = [];
  const parameters =
    declaration.parametersJsonSchema ??
    (declaration.parameters
      ? toJsonSchema(declaration.parameters, `${param}.parameters`, ignored)
      : { type: "object", properties: {} });
  for (const text of ignored) note(text);
  const { schema, removed } = removeWaitForPrevious(parameters);
  if (removed)
    note(`${waitForPrevious} in tool parameters (Gemini CLI scheduling hint, not offered to the model)`);
  return { name: declaration.name, description: declaration.description ?? "", parameters: schema };
}

type Declarations = NonNullable<GenerateContentRequest["tools"]>;
type KeptTools = { tools: HubTool[]; notes: string[] };

/** `memos`: the episode's, where a resent tool list's hub tools and notes are kept. */
export function convertTools(
  request: GenerateContentRequest,
  notes: IgnoredFields,
  memos?: FrozenMemos,
): HubTool[] {
  const declared = request.tools;
  if (memos === undefined || declared === undefined || !Object.isFrozen(declared))
    return convertDeclarations(declared ?? [], (note) => notes.add(note));
  const keptTools = memos.table<Declarations, KeptTools>(convertTools);
  let kept = keptTools.get(declared);
  if (kept === undefined) {
    const taken: string[] = [];
    const tools = convertDeclarations(declared, (note) => taken.push(note));
    kept = { tools: deepFreeze(tools), notes: taken };
    keptTools.set(declared, kept);
  }
  for (const note of kept.notes) notes.add(note);
  return kept.tools;
}

/** `note`: takes each note the conversion makes. */
function convertDeclarations(declared: Declarations, note: (text: string) => void): HubTool[] {
  const tools: HubTool[] = [];
  const names = new Set<string>();
  declared.forEach((tool, i) => {
    tool.functionDeclarations.forEach((declaration, j) => {
      const param = `tools[${i}].functionDeclarations[${j}]`;
      if (names.has(declaration.name))
        throw invalidField(`${param}.name`, `duplicate function name ${JSON.stringify(declaration.name)}`);
      names.add(declaration.name);
      tools.push(convertDeclaration(declaration, param, note));
    });
  });
  return tools;
}

export function convertToolChoice(
  request: GenerateContentRequest,
  tools: HubTool[],
): HubToolChoice | undefined {
  const config = request.toolConfig?.functionCallingConfig;
  if (!config) return undefined;
  const param = "toolConfig.functionCallingConfig";
  const mode = config.mode ?? "AUTO";
  const allowed = config.allowedFunctionNames ?? [];
  allowed.forEach((name, k) => {
    if (!tools.some((t) => t.name === name))
      throw invalidField(
        `${param}.allowedFunctionNames[${k}]`,
        `no declared function is named ${JSON.stringify(name)}`,
      );
  });
  if (allowed.length > 0) {
    if (mode !== "ANY") throw invalidField(`${param}.allowedFunctionNames`, "only valid with mode ANY");
    if (allowed.length > 1)
      throw invalidField(
        `${param}.allowedFunctionNames`,
        "more than one allowed function cannot be expressed upstream; name exactly one",
      );
    return { name: allowed[0] ?? "" };
  }
  switch (mode) {
    case "MODE_UNSPECIFIED":
    case "AUTO":
      return "auto";
    case "ANY":
      return "required";
    case "NONE":
      return "none";
    default: {
      const never: never = mode;
      throw new Error(`unknown mode ${never}`);
    }
  }
}
