/**
 * What the reliability tests need to speak each ingress protocol (tests only):
 * the path under an episode, how the client presents its key, a minimal
 * first-turn request offering the robot tools under that client's naming
 * scheme, and a strict reader of the protocol's error envelope. The expected
 * statuses are written out here, independently of `src/ingress/*\/errors.ts`,
 * so a change there shows up as a failing test.
 */
import { type Protocol, protocolSchema } from "../../src/hub/protocol.ts";
import type { ErrorKind } from "../../src/lib/errors.ts";

/** The protocols as src/hub/protocol.ts spells them: a new one is a compile error in every table below. */
export type ProtocolName = Protocol;
export const protocols: readonly ProtocolName[] = protocolSchema.options;

/** An error envelope as the client reads it. */
export type ReadEnvelope = { message: string; type: string };

export type IngressKit = {
  protocol: ProtocolName;
  /** Path of a model exchange below the origin. */
  path: (episodeId: string, model: string, stream: boolean) => string;
  headers: (key: string) => Record<string, string>;
  /** The model-visible name of a manifest tool for this client. */
  toolName: (tool: string) => string;
  /** A first turn offering record, observe, finish (record first: the scripted faults take the first tool). */
  firstTurn: (stream: boolean) => Record<string, unknown>;
  /** The envelope's message and type; throws when the body is not exactly this protocol's envelope. */
  readError: (status: number, body: unknown) => ReadEnvelope;
  /** The status and type this protocol must answer for an error kind. */
  expected: (kind: ErrorKind) => { status: number; type: string };
};

const robotTools = ["record", "observe", "finish"];
const argsSchema = (tool: string) => ({
  type: "object",
  properties: tool === "observe" ? {} : { [tool === "record" ? "nonce" : "answer"]: { type: "string" } },
});
const userText = "Observe the scene, record the nonce twice, then finish with the colour.";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function fail(protocol: string, body: unknown, why: string): never {
  throw new Error(`${protocol} error envelope: ${why}: ${JSON.stringify(body).slice(0, 400)}`);
}

function exactKeys(protocol: string, body: unknown, value: Record<string, unknown>, keys: string[]): void {
  const have = Object.keys(value).sort();
  if (have.join() !== [...keys].sort().join())
    fail(protocol, body, `keys ${have.join()} (expected ${keys.join()})`);
}

/**
 * The status and error type each protocol must answer for each error kind, one row a
 * kind: responses (OpenAI), gemini (Google canonical status), messages (Anthropic).
 * 5xx only where a retry could help; Anthropic's overloaded is 529.
 */
type Answer = [status: number, type: string];
const expectedAnswers: Record<ErrorKind, Record<ProtocolName, Answer>> = {
  invalid_request: {
    responses: [400, "invalid_request_error"],
    gemini: [400, "INVALID_ARGUMENT"],
    messages: [400, "invalid_request_error"],
  },
  request_too_large: {
    responses: [400, "invalid_request_error"],
    gemini: [400, "INVALID_ARGUMENT"],
    messages: [400, "invalid_request_error"],
  },
  upstream_rejected: {
    responses: [400, "invalid_request_error"],
    gemini: [400, "INVALID_ARGUMENT"],
    messages: [400, "invalid_request_error"],
  },
  episode_closed: {
    responses: [400, "invalid_request_error"],
    gemini: [400, "FAILED_PRECONDITION"],
    messages: [400, "invalid_request_error"],
  },
  /** Never reaches an ingress (an operator's decision on a settled call); mapped for completeness. */
  conflict: {
    responses: [409, "invalid_request_error"],
    gemini: [409, "FAILED_PRECONDITION"],
    messages: [400, "invalid_request_error"],
  },
  authentication: {
    responses: [401, "authentication_error"],
    gemini: [401, "UNAUTHENTICATED"],
    messages: [401, "authentication_error"],
  },
  not_found: {
    responses: [404, "invalid_request_error"],
    gemini: [404, "NOT_FOUND"],
    messages: [404, "not_found_error"],
  },
  upstream_transient: {
    responses: [503, "server_error"],
    gemini: [503, "UNAVAILABLE"],
    messages: [529, "overloaded_error"],
  },
  unavailable: {
    responses: [503, "server_error"],
    gemini: [503, "UNAVAILABLE"],
    messages: [529, "overloaded_error"],
  },
  upstream_invalid: {
    responses: [502, "server_error"],
    gemini: [502, "INTERNAL"],
    messages: [500, "api_error"],
  },
  internal: {
    responses: [500, "server_error"],
    gemini: [500, "INTERNAL"],
    messages: [500, "api_error"],
  },
};

function expectedAnswer(kind: ErrorKind, protocol: ProtocolName): { status: number; type: string } {
  const [status, type] = expectedAnswers[kind][protocol];
  return { status, type };
}

export const responsesKit: IngressKit = {
  protocol: "responses",
  path: (id) => `/e/${id}/v1/responses`,
  headers: (key) => ({ authorization: `Bearer ${key}` }),
  toolName: (tool) => `ura_${tool}`,
  firstTurn: (stream) => ({
    model: "ura-qwen",
    stream,
    store: false,
    input: [{ type: "message", role: "user", content: [{ type: "input_text", text: userText }] }],
    tools: robotTools.map((t) => ({
      type: "function",
      name: `ura_${t}`,
      description: t,
      parameters: argsSchema(t),
    })),
    tool_choice: "auto",
  }),
  readError(_status, body) {
    if (!isRecord(body) || !isRecord(body.error)) fail("responses", body, "no error object");
    exactKeys("responses", body, body, ["error"]);
    const e = body.error;
    exactKeys("responses", body, e, ["message", "type", "param", "code"]);
    if (typeof e.message !== "string" || e.message === "") fail("responses", body, "message");
    if (typeof e.type !== "string" || typeof e.code !== "string") fail("responses", body, "type/code");
    if (e.param !== null && typeof e.param !== "string") fail("responses", body, "param");
    return { message: e.message, type: e.type };
  },
  expected: (kind) => expectedAnswer(kind, "responses"),
};

export const geminiKit: IngressKit = {
  protocol: "gemini",
  path: (id, model, stream) =>
    `/e/${id}/gemini/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
  headers: (key) => ({ "x-goog-api-key": key }),
  toolName: (tool) => `mcp_ura_${tool}`,
  firstTurn: () => ({
    contents: [{ role: "user", parts: [{ text: userText }] }],
    systemInstruction: { role: "user", parts: [{ text: "You drive a robot." }] },
    tools: [
      {
        functionDeclarations: robotTools.map((t) => ({
          name: `mcp_ura_${t}`,
          description: t,
          parametersJsonSchema: argsSchema(t),
        })),
      },
    ],
    generationConfig: { temperature: 0 },
  }),
  readError(status, body) {
    if (!isRecord(body) || !isRecord(body.error)) fail("gemini", body, "no error object");
    exactKeys("gemini", body, body, ["error"]);
    const e = body.error;
    exactKeys("gemini", body, e, ["code", "message", "status"]);
    if (e.code !== status) fail("gemini", body, `code ${String(e.code)} is not the HTTP status ${status}`);
    if (typeof e.message !== "string" || e.message === "") fail("gemini", body, "message");
    if (typeof e.status !== "string" || !/^[A-Z_]+$/.test(e.status)) fail("gemini", body, "status");
    return { message: e.message, type: e.status };
  },
  expected: (kind) => expectedAnswer(kind, "gemini"),
};

export const messagesKit: IngressKit = {
  protocol: "messages",
  path: (id) => `/e/${id}/anthropic/v1/messages`,
  headers: (key) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
  toolName: (tool) => `mcp__ura__${tool}`,
  firstTurn: (stream) => ({
    model: "claude-sonnet-4-5",
    max_tokens: 1024,
    stream,
    system: [{ type: "text", text: "You drive a robot." }],
    messages: [{ role: "user", content: [{ type: "text", text: userText }] }],
    tools: robotTools.map((t) => ({ name: `mcp__ura__${t}`, description: t, input_schema: argsSchema(t) })),
  }),
  readError(_status, body) {
    if (!isRecord(body) || !isRecord(body.error)) fail("messages", body, "no error object");
    exactKeys("messages", body, body, ["type", "error"]);
    if (body.type !== "error") fail("messages", body, "type is not 'error'");
    const e = body.error;
    exactKeys("messages", body, e, ["type", "message"]);
    if (typeof e.message !== "string" || e.message === "") fail("messages", body, "message");
    if (typeof e.type !== "string") fail("messages", body, "type");
    return { message: e.message, type: e.type };
  },
  expected: (kind) => expectedAnswer(kind, "messages"),
};

export const ingressKits: Record<ProtocolName, IngressKit> = {
  responses: responsesKit,
  gemini: geminiKit,
  messages: messagesKit,
};

/**
 * Parsed JSON lines of a records file (missing file → []). A last line without
 * its newline is still being written by the sidecar and is left out.
 */
export async function readJsonLines(path: string): Promise<Record<string, unknown>[]> {
  const file = Bun.file(path);
  if (!(await file.exists())) return [];
  const lines = (await file.text()).split("\n");
  return lines
    .slice(0, -1)
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
