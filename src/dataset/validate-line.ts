/**
 * The checks every dataset line must pass before it is written (always on). A
 * line that fails any of them is not written: the manifest lists it with every
 * problem found. The checks read the line back from its serialised text, so what
 * is checked is what a trainer will read.
 */
import { createHash } from "node:crypto";
import type { JsonSchemaType } from "@modelcontextprotocol/sdk/validation";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { Codecs, RgbaImage } from "../images/codecs.ts";
import { errorMessage } from "../lib/error-message.ts";
import type { WireRequest } from "./build-conversations.ts";
import type { SecretFinder } from "./find-secrets.ts";
import type { BlobRef } from "./read-episode.ts";
import { type ImageSource, isImagePart, mapImageUrls, type SentImage, toDataUrl } from "./render-line.ts";

export const checkNames = [
  "tool calls and results pair up",
  "tool call ids are unique",
  "arguments are JSON matching the tool's schema",
  "no sidecar-private fields",
  "images present, decodable, pixel-identical to the frames sent",
  "no secrets",
  "system prompt, tools and messages as sent",
] as const;
export type CheckName = (typeof checkNames)[number];
export type Problem = { check: CheckName; problem: string };

/** Arguments only the sidecar's own client plugin adds (OpenCode's call-id plugin); the model never produces them. */
export const sidecarPrivateArgumentKeys = ["_callID"] as const;

/** The frames the client sent in the exchange: pixel digests of its PNGs, byte digests of every image. */
export type SentFrames = { pixels: Set<string>; bytes: Set<string> };

export type LineContext = {
  lineText: string;
  /** Dataset files by relative path (images/sha256-….webp). */
  files: Map<string, Uint8Array>;
  request: WireRequest;
  source: ImageSource;
  frames: SentFrames;
  codecs: Codecs;
  findSecrets: SecretFinder;
};

type ToolCall = { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };
type Message = { role?: unknown; content?: unknown; tool_calls?: ToolCall[]; tool_call_id?: unknown };

export function pixelDigest(image: RgbaImage): string {
  return createHash("sha256").update(`${image.width}x${image.height}:`).update(image.data).digest("hex");
}

export function validateLine(context: LineContext): Problem[] {
  const problems: Problem[] = [];
  const add = (check: CheckName, problem: string) => problems.push({ check, problem });
  let line: { messages?: Message[]; tools?: { function?: { name?: string; parameters?: unknown } }[] };
  try {
    line = JSON.parse(context.lineText);
  } catch (error) {
    add("system prompt, tools and messages as sent", `the line is not JSON: ${errorMessage(error)}`);
    return problems;
  }
  const messages = Array.isArray(line.messages) ? line.messages : [];
  checkPairing(messages, add);
  checkArguments(messages, line.tools ?? [], add);
  checkImages(messages, context, add);
  for (const kind of context.findSecrets(context.lineText)) add("no secrets", `the line contains ${kind}`);
  checkAsSent(messages, line.tools, context, add);
  return problems;
}

function checkPairing(messages: Message[], add: (check: CheckName, problem: string) => void): void {
  const seen = new Set<string>();
  const open = new Map<string, number>();
  const last = messages.length - 1;
  if (messages[last]?.role !== "assistant")
    add("tool calls and results pair up", "the line does not end with the model's answer");
  messages.forEach((message, i) => {
    if (message.role === "assistant") {
      for (const [n, call] of (message.tool_calls ?? []).entries()) {
        const id = typeof call.id === "string" && call.id !== "" ? call.id : undefined;
        if (!id) {
          add("tool call ids are unique", `messages[${i}].tool_calls[${n}] has no id`);
          continue;
        }
        if (seen.has(id)) add("tool call ids are unique", `call id ${id} appears twice (messages[${i}])`);
        seen.add(id);
        if (i !== last) open.set(id, i);
      }
    }
    if (message.role === "tool") {
      const id = message.tool_call_id;
      if (typeof id !== "string" || !open.has(id)) {
        add(
          "tool calls and results pair up",
          `messages[${i}] is a result for ${JSON.stringify(id)}, which no earlier call without a result has`,
        );
      } else open.delete(id);
    }
  });
  for (const [id, i] of open)
    add("tool calls and results pair up", `call ${id} (messages[${i}]) has no result`);
}

function checkArguments(
  messages: Message[],
  tools: { function?: { name?: string; parameters?: unknown } }[],
  add: (check: CheckName, problem: string) => void,
): void {
  const provider = new AjvJsonSchemaValidator();
  const validators = new Map<string, (args: unknown) => { valid: boolean; errorMessage?: string }>();
  for (const tool of tools) {
    const name = tool.function?.name;
    const schema = tool.function?.parameters;
    if (typeof name !== "string") continue;
    if (schema && typeof schema === "object" && "properties" in schema) {
      const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {};
      for (const key of sidecarPrivateArgumentKeys)
        if (key in properties)
          add("no sidecar-private fields", `tool ${name} declares the private argument ${key}`);
    }
    try {
      validators.set(name, provider.getValidator((schema ?? {}) as JsonSchemaType));
    } catch (error) {
      add(
        "arguments are JSON matching the tool's schema",
        `tool ${name}: its schema does not compile: ${errorMessage(error)}`,
      );
    }
  }
  messages.forEach((message, i) => {
    for (const call of message.tool_calls ?? []) {
      const where = `call ${String(call.id)} (messages[${i}])`;
      const name = call.function?.name;
      const text = call.function?.arguments;
      if (call.type !== "function" || typeof name !== "string" || typeof text !== "string") {
        add(
          "arguments are JSON matching the tool's schema",
          `${where} is not a function call with a name and JSON-string arguments`,
        );
        continue;
      }
      let args: unknown;
      try {
        args = JSON.parse(text);
      } catch {
        add("arguments are JSON matching the tool's schema", `${where}: arguments are not JSON`);
        continue;
      }
      if (args && typeof args === "object" && !Array.isArray(args)) {
        for (const key of sidecarPrivateArgumentKeys)
          if (key in args) add("no sidecar-private fields", `${where} carries the private argument ${key}`);
      }
      const validate = validators.get(name);
      if (!validate) {
        add(
          "arguments are JSON matching the tool's schema",
          `${where} calls ${name}, which the line's tools do not declare`,
        );
        continue;
      }
      const result = validate(args);
      if (!result.valid)
        add(
          "arguments are JSON matching the tool's schema",
          `${where} to ${name}: ${result.errorMessage ?? "does not match the schema"}`,
        );
    }
  });
}

function mediaTypeOfFile(file: string): string | undefined {
  if (file.endsWith(".webp")) return "image/webp";
  if (file.endsWith(".png")) return "image/png";
  if (file.endsWith(".jpg")) return "image/jpeg";
  if (file.endsWith(".gif")) return "image/gif";
  return undefined;
}

/** The image a line's url stands for: a dataset file (checked against its name) or an inline data URL. */
function imageOfUrl(url: string, files: Map<string, Uint8Array>): SentImage | string {
  if (url.startsWith("data:")) {
    const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
    if (!match?.[1] || match[2] === undefined) return "an image data URL that does not parse";
    return { mediaType: match[1], bytes: new Uint8Array(Buffer.from(match[2], "base64")) };
  }
  const bytes = files.get(url);
  if (!bytes) return `${url} is not in the dataset`;
  const hex = /sha256-([0-9a-f]{64})\./.exec(url)?.[1];
  if (createHash("sha256").update(bytes).digest("hex") !== hex)
    return `${url}: its bytes do not hash to its name`;
  const mediaType = mediaTypeOfFile(url);
  if (!mediaType) return `${url}: unknown image type`;
  return { mediaType, bytes };
}

function decode(image: SentImage, codecs: Codecs): RgbaImage | undefined {
  if (image.mediaType === "image/webp") return codecs.decodeWebp(image.bytes);
  if (image.mediaType === "image/png") return codecs.decodePng(image.bytes);
  return undefined;
}

function checkImages(
  messages: Message[],
  context: LineContext,
  add: (check: CheckName, problem: string) => void,
): void {
  const check = "images present, decodable, pixel-identical to the frames sent" as const;
  messages.forEach((message, i) => {
    if (!Array.isArray(message.content)) return;
    for (const part of message.content) {
      if (!isImagePart(part)) continue;
      const url = part.image_url.url;
      if (typeof url !== "string") {
        add(check, `messages[${i}]: an image reference that is not a path or data URL`);
        continue;
      }
      const image = imageOfUrl(url, context.files);
      if (typeof image === "string") {
        add(check, `messages[${i}]: ${image}`);
        continue;
      }
      const bytesDigest = createHash("sha256").update(image.bytes).digest("hex");
      let pixels: RgbaImage | undefined;
      try {
        pixels = decode(image, context.codecs);
      } catch (error) {
        add(check, `messages[${i}]: ${url.slice(0, 80)} does not decode: ${errorMessage(error)}`);
        continue;
      }
      const sentAsIs = context.frames.bytes.has(bytesDigest);
      if (!sentAsIs && !(pixels && context.frames.pixels.has(pixelDigest(pixels))))
        add(
          check,
          `messages[${i}]: ${url.startsWith("data:") ? "an inline image" : url} matches no frame the client sent in this exchange, pixel for pixel`,
        );
    }
  });
}

/** The line, its images put back inline, must be the recorded upstream request plus the answer. */
function checkAsSent(
  messages: Message[],
  tools: unknown,
  context: LineContext,
  add: (check: CheckName, problem: string) => void,
): void {
  const check = "system prompt, tools and messages as sent" as const;
  const sent = context.request.messages;
  if (messages.length !== sent.length + 1) {
    add(
      check,
      `the line has ${messages.length} messages; the upstream request had ${sent.length} plus the answer`,
    );
    return;
  }
  const inline = (url: string | BlobRef) => {
    const image = typeof url === "string" ? imageOfUrl(url, context.files) : context.source(url);
    return typeof image === "string" ? String(url) : toDataUrl(image);
  };
  const lineMessages = mapImageUrls(messages.slice(0, -1) as Record<string, unknown>[], inline);
  const sentMessages = mapImageUrls(sent, (url) =>
    typeof url === "string" ? url : toDataUrl(context.source(url)),
  );
  const firstSystem = sent.findIndex((m) => m.role === "system");
  lineMessages.forEach((message, i) => {
    if (JSON.stringify(message) === JSON.stringify(sentMessages[i])) return;
    add(
      check,
      i === firstSystem
        ? "the system prompt differs from the one sent"
        : `messages[${i}] differs from what was sent`,
    );
  });
  if (JSON.stringify(tools) !== JSON.stringify(context.request.tools))
    add(check, "the tool definitions differ from the ones sent");
}
