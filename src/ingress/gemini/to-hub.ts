/**
 * Gemini GenerateContent request → hub request (pure).
 *
 * - `contents`: a `model` content becomes one assistant message (its text parts
 *   joined, its functionCalls as tool calls, arguments as JSON text of `args`
 *   exactly as the client echoed them — `wait_for_previous` included, since the
 *   ledger's canonical arguments ignore it anyway — or, when the route still knows
 *   the call and the echo is equal, the exact text Qwen wrote). A `user` content becomes one
 *   tool message per functionResponse, then one user message with its remaining
 *   text and images. An `inlineData` part after a functionResponse (Gemini CLI's
 *   way of returning an MCP image) belongs to that tool message, so the image
 *   reaches Qwen labelled with its call.
 * - Call ids: Qwen's ids travel to the CLI as `functionCall.id` and come back on
 *   the history's functionCall and `functionResponse.id`. A history functionCall
 *   without an id gets `gemini_call_<content>_<part>`; a functionResponse without an
 *   id answers the first unanswered call of the same name in the preceding model
 *   turn.
 * - `thoughtSignature: "skip_thought_signature_validator"` (Gemini CLI's placeholder)
 *   is dropped; any other signature is refused: we hold no Google reasoning state.
 * - Tools: `parametersJsonSchema` is forwarded as is, `parameters` (OpenAPI style)
 *   is converted; the `wait_for_previous` property Gemini CLI adds to every tool is
 *   removed (a client scheduling hint, not a model parameter).
 * Spec: https://ai.google.dev/api/generate-content
 */
import { geminiSchedulingHint as waitForPrevious } from "../../clients/private-arguments.ts";
import type { Rendered, Translation } from "../../exchange/run-exchange.ts";
import type {
  HubMessage,
  HubPart,
  HubRequest,
  HubResponse,
  HubTool,
  HubToolCall,
  HubToolChoice,
  HubToolMessage,
} from "../../hub/schema.ts";
import { invalidField, SidecarError } from "../../lib/errors.ts";
import type { JsonBody } from "../../lib/parse-json-body.ts";
import { createIgnoredFields, type IgnoredFields } from "../ignored-fields.ts";
import type { GeminiOperation } from "./classify-operation.ts";
import { fromHub } from "./from-hub.ts";
import { liftErrorImages } from "./lift-error-images.ts";
import { parseRequest } from "./parse-request.ts";
import type { Content, FunctionDeclaration, GenerateContentRequest, Part } from "./schema.ts";
import { renderStream, streamEvents } from "./stream.ts";
import { toJsonSchema } from "./to-json-schema.ts";

export const skipThoughtSignature = "skip_thought_signature_validator";

type PartKind = "text" | "inlineData" | "functionCall" | "functionResponse";
const partKinds: readonly PartKind[] = ["text", "inlineData", "functionCall", "functionResponse"];

type PendingCall = { id: string; name: string; answered: boolean };

function kindOf(part: Part, param: string, notes: IgnoredFields): PartKind {
  if (part.thoughtSignature !== undefined) {
    if (part.thoughtSignature !== skipThoughtSignature) {
      throw invalidField(
        `${param}.thoughtSignature`,
        "only Gemini CLI's placeholder signature is accepted; the sidecar holds no Google reasoning state",
      );
    }
    notes.add(`thoughtSignature "${skipThoughtSignature}" (dropped)`);
  }
  const present = partKinds.filter((k) => part[k] !== undefined);
  const [kind] = present;
  if (present.length !== 1 || kind === undefined) {
    throw invalidField(
      param,
      `a part must hold exactly one of ${partKinds.join(", ")} (found ${present.length === 0 ? "none" : present.join(", ")})`,
    );
  }
  return kind;
}

function imageOf(blob: { mimeType: string; data: string }, param: string): HubPart {
  if (!blob.mimeType.startsWith("image/"))
    throw invalidField(
      `${param}.mimeType`,
      `only images are supported, not ${JSON.stringify(blob.mimeType)}`,
    );
  return { type: "image", mediaType: blob.mimeType, data: blob.data, source: param };
}

/** Gemini CLI wraps a tool's text as `{output: "…"}`; anything else is sent as its JSON. */
function responseText(response: Record<string, unknown>): string {
  const keys = Object.keys(response);
  return keys.length === 1 && typeof response.output === "string"
    ? response.output
    : JSON.stringify(response);
}

/**
 * The arguments text Qwen produced for a delivered call id, if the episode kept it.
 * Gemini carries arguments as an object, so the original bytes are lost on the
 * client's side; when the echoed object equals the delivered one, the history
 * sent upstream uses the exact text Qwen wrote.
 */
export type DeliveredArguments = (callId: string) => string | undefined;

function argumentsText(
  id: string | undefined,
  args: Record<string, unknown>,
  delivered: DeliveredArguments,
): string {
  const original = id === undefined ? undefined : delivered(id);
  if (original !== undefined && Bun.deepEquals(JSON.parse(original), args, true)) return original;
  return JSON.stringify(args);
}

function convertModelContent(
  content: Content,
  i: number,
  notes: IgnoredFields,
  delivered: DeliveredArguments,
): { message: HubMessage; calls: PendingCall[] } {
  const texts: string[] = [];
  const toolCalls: HubToolCall[] = [];
  content.parts.forEach((part, j) => {
    const param = `contents[${i}].parts[${j}]`;
    const kind = kindOf(part, param, notes);
    switch (kind) {
      case "text":
        texts.push(part.text ?? "");
        break;
      case "functionCall": {
        const call = part.functionCall;
        if (!call) break;
        toolCalls.push({
          id: call.id ?? `gemini_call_${i}_${j}`,
          name: call.name,
          arguments: argumentsText(call.id, call.args ?? {}, delivered),
          source: `${param}.functionCall`,
        });
        break;
      }
      case "inlineData":
      case "functionResponse":
        throw invalidField(`${param}.${kind}`, "not allowed in a model content");
      default: {
        const never: never = kind;
        throw new Error(`unknown part kind ${never}`);
      }
    }
  });
  return {
    message: { role: "assistant", text: texts.length > 0 ? texts.join("") : null, toolCalls },
    calls: toolCalls.map((c) => ({ id: c.id, name: c.name, answered: false })),
  };
}

function convertUserContent(
  content: Content,
  i: number,
  pending: PendingCall[],
  notes: IgnoredFields,
): HubMessage[] {
  const toolMessages: HubToolMessage[] = [];
  const userParts: HubPart[] = [];
  let current: HubToolMessage | undefined;
  content.parts.forEach((part, j) => {
    const param = `contents[${i}].parts[${j}]`;
    const kind = kindOf(part, param, notes);
    switch (kind) {
      case "text":
        userParts.push({ type: "text", text: part.text ?? "" });
        current = undefined;
        break;
      case "inlineData": {
        const image = imageOf(part.inlineData ?? { mimeType: "", data: "" }, `${param}.inlineData`);
        if (current) current.content.push(image);
        else userParts.push(image);
        break;
      }
      case "functionResponse": {
        const response = part.functionResponse;
        if (!response) break;
        let id = response.id;
        const call =
          id === undefined
            ? pending.find((c) => !c.answered && c.name === response.name)
            : pending.find((c) => c.id === id);
        if (id === undefined) {
          if (!call)
            throw invalidField(
              `${param}.functionResponse.id`,
              `missing, and no unanswered call named ${JSON.stringify(response.name)} in the preceding model content to pair it with`,
            );
          id = call.id;
        }
        if (call) call.answered = true;
        const images = (response.parts ?? []).map((p, k) =>
          imageOf(p.inlineData, `${param}.functionResponse.parts[${k}].inlineData`),
        );
        const error = response.response.error;
        const lifted =
          typeof error === "string"
            ? liftErrorImages(error, `${param}.functionResponse.response.error`)
            : undefined;
        if (lifted?.note) notes.add(`${param}.functionResponse.response.error: ${lifted.note}`);
        const text = responseText(lifted ? { ...response.response, error: lifted.text } : response.response);
        current = {
          role: "tool",
          toolCallId: id,
          name: response.name,
          content: [{ type: "text", text }, ...(lifted?.images ?? []), ...images],
          ...("error" in response.response ? { isError: true } : {}),
          source: `${param}.functionResponse`,
        };
        toolMessages.push(current);
        break;
      }
      case "functionCall":
        throw invalidField(`${param}.functionCall`, "not allowed in a user content");
      default: {
        const never: never = kind;
        throw new Error(`unknown part kind ${never}`);
      }
    }
  });
  return userParts.length > 0 ? [...toolMessages, { role: "user", content: userParts }] : toolMessages;
}

function convertContents(
  contents: Content[],
  notes: IgnoredFields,
  delivered: DeliveredArguments,
): HubMessage[] {
  const messages: HubMessage[] = [];
  let pending: PendingCall[] = [];
  contents.forEach((content, i) => {
    if (content.role === "model") {
      const { message, calls } = convertModelContent(content, i, notes, delivered);
      messages.push(message);
      pending = calls;
    } else {
      messages.push(...convertUserContent(content, i, pending, notes));
    }
  });
  return messages;
}

function convertSystem(request: GenerateContentRequest, notes: IgnoredFields): HubMessage[] {
  const system = request.systemInstruction;
  if (!system) return [];
  const content = system.parts.map((part, j) => {
    const param = `systemInstruction.parts[${j}]`;
    if (kindOf(part, param, notes) !== "text")
      throw invalidField(param, "only text parts are allowed in systemInstruction");
    return { type: "text" as const, text: part.text ?? "" };
  });
  return [{ role: "system", content }];
}

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

function convertDeclaration(declaration: FunctionDeclaration, param: string, notes: IgnoredFields): HubTool {
  if (declaration.parameters && declaration.parametersJsonSchema) {
    throw invalidField(`${param}.parameters`, "give either parameters or parametersJsonSchema, not both");
  }
  const ignored: string[] = [];
  const parameters =
    declaration.parametersJsonSchema ??
    (declaration.parameters
      ? toJsonSchema(declaration.parameters, `${param}.parameters`, ignored)
      : { type: "object", properties: {} });
  for (const note of ignored) notes.add(note);
  const { schema, removed } = removeWaitForPrevious(parameters);
  if (removed)
    notes.add(`${waitForPrevious} in tool parameters (Gemini CLI scheduling hint, not offered to the model)`);
  return { name: declaration.name, description: declaration.description ?? "", parameters: schema };
}

function convertTools(request: GenerateContentRequest, notes: IgnoredFields): HubTool[] {
  const tools: HubTool[] = [];
  const names = new Set<string>();
  (request.tools ?? []).forEach((tool, i) => {
    tool.functionDeclarations.forEach((declaration, j) => {
      const param = `tools[${i}].functionDeclarations[${j}]`;
      if (names.has(declaration.name))
        throw invalidField(`${param}.name`, `duplicate function name ${JSON.stringify(declaration.name)}`);
      names.add(declaration.name);
      tools.push(convertDeclaration(declaration, param, notes));
    });
  });
  return tools;
}

function convertToolChoice(request: GenerateContentRequest, tools: HubTool[]): HubToolChoice | undefined {
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

function convertResponseFormat(
  request: GenerateContentRequest,
  notes: IgnoredFields,
): HubRequest["responseFormat"] {
  const config = request.generationConfig;
  if (!config) return undefined;
  const param = "generationConfig";
  if (config.responseJsonSchema && config.responseSchema) {
    throw invalidField(
      `${param}.responseSchema`,
      "give either responseSchema or responseJsonSchema, not both",
    );
  }
  const ignored: string[] = [];
  const schema =
    config.responseJsonSchema ??
    (config.responseSchema
      ? toJsonSchema(config.responseSchema, `${param}.responseSchema`, ignored)
      : undefined);
  for (const note of ignored) notes.add(note);
  const mime = config.responseMimeType ?? "text/plain";
  if (mime === "application/json") return schema ? { type: "json_schema", schema } : { type: "json_object" };
  if (mime !== "text/plain")
    throw invalidField(
      `${param}.responseMimeType`,
      `unsupported ${JSON.stringify(mime)}; use text/plain or application/json`,
    );
  if (schema)
    throw invalidField(
      `${param}.responseMimeType`,
      "a response schema needs responseMimeType application/json",
    );
  return undefined;
}

export type ToHubContext = {
  /** What the request path asks for (classify-operation.ts); countTokens is answered by the route. */
  operation: Exclude<GeminiOperation, { kind: "count_tokens" }>;
  deliveredArguments?: DeliveredArguments;
};

/**
 * An unsupported operation is refused before anything else: it ends the episode's
 * model work (provider_error) and nothing goes upstream.
 */
export function toHub(body: JsonBody, ctx: ToHubContext): Translation {
  const { operation } = ctx;
  if (operation.kind === "unsupported")
    throw new SidecarError("invalid_request", operation.reason, { episodeFatal: true });
  const hub = requestToHub(parseRequest(body), operation.model, ctx.deliveredArguments ?? (() => undefined));
  return { hub, render: (response): Rendered => render(response, operation) };
}

function render(response: HubResponse, operation: { stream: boolean; sse: boolean }): Rendered {
  if (operation.sse) return { contentType: "text/event-stream", chunks: renderStream(response) };
  if (operation.stream)
    return { contentType: "application/json", chunks: [JSON.stringify(streamEvents(response))] };
  return { contentType: "application/json", chunks: [JSON.stringify(fromHub(response))] };
}

/** `model` is the model name from the request path (already checked against the episode). */
function requestToHub(
  request: GenerateContentRequest,
  model: string,
  delivered: DeliveredArguments,
): HubRequest {
  const notes = createIgnoredFields();
  const messages = [...convertSystem(request, notes), ...convertContents(request.contents, notes, delivered)];
  const tools = convertTools(request, notes);
  const hub: HubRequest = { model, messages, tools, ignored: [] };
  const toolChoice = convertToolChoice(request, tools);
  if (toolChoice !== undefined) hub.toolChoice = toolChoice;
  const config = request.generationConfig;
  if (config?.temperature !== undefined) hub.temperature = config.temperature;
  if (config?.topP !== undefined) hub.topP = config.topP;
  if (config?.topK !== undefined) hub.topK = config.topK;
  if (config?.maxOutputTokens !== undefined) hub.maxOutputTokens = config.maxOutputTokens;
  if (config?.stopSequences !== undefined) hub.stop = config.stopSequences;
  const responseFormat = convertResponseFormat(request, notes);
  if (responseFormat) hub.responseFormat = responseFormat;
  if (config?.thinkingConfig !== undefined)
    notes.add("generationConfig.thinkingConfig (upstream runs with thinking disabled)");
  if (request.safetySettings !== undefined)
    notes.add("safetySettings (Google safety filters; no upstream counterpart)");
  hub.ignored = notes.list();
  return hub;
}
