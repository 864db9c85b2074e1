/**
 * Gemini's OpenAPI-style `Schema` (function `parameters`, `responseSchema`) →
 * JSON Schema, which is what Qwen's `tools[].function.parameters` takes.
 * Upper-case `type` values become lower-case, `nullable` becomes a type union,
 * `example` becomes `examples`, int64 fields sent as strings become numbers.
 * `propertyOrdering` (a Gemini generation hint) is dropped and listed as ignored;
 * any other unknown keyword is refused with a 400 naming it.
 * Spec: https://ai.google.dev/api/caching#Schema
 */
import { invalidField } from "../../lib/errors.ts";

const typeNames: Record<string, string> = {
  STRING: "string",
  NUMBER: "number",
  INTEGER: "integer",
  BOOLEAN: "boolean",
  ARRAY: "array",
  OBJECT: "object",
  NULL: "null",
};
const copied = new Set([
  "format",
  "title",
  "description",
  "enum",
  "pattern",
  "default",
  "minimum",
  "maximum",
  "required",
]);
/** int64 fields: proto JSON may send them as strings. */
const counts = new Set(["maxItems", "minItems", "minLength", "maxLength", "minProperties", "maxProperties"]);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function convertType(value: unknown, param: string): string | undefined {
  if (typeof value !== "string") throw invalidField(param, "must be a string");
  if (value === "TYPE_UNSPECIFIED") return undefined;
  const name = typeNames[value.toUpperCase()];
  if (!name) throw invalidField(param, `unknown type ${JSON.stringify(value)}`);
  return name;
}

function convertCount(value: unknown, param: string): number {
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0)
    throw invalidField(param, "must be a non-negative integer");
  return n;
}

/** Converts one Schema; `ignored` collects what was accepted but dropped. */
export function toJsonSchema(schema: unknown, param: string, ignored: string[]): Record<string, unknown> {
  if (!isObject(schema)) throw invalidField(param, "must be a schema object");
  const out: Record<string, unknown> = {};
  let nullable = false;
  for (const [key, value] of Object.entries(schema)) {
    const at = `${param}.${key}`;
    if (key === "type") {
      const type = convertType(value, at);
      if (type) out.type = type;
    } else if (key === "nullable") {
      if (typeof value !== "boolean") throw invalidField(at, "must be a boolean");
      nullable = value;
    } else if (key === "properties") {
      if (!isObject(value)) throw invalidField(at, "must be an object");
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, toJsonSchema(sub, `${at}.${name}`, ignored)]),
      );
    } else if (key === "items") {
      out.items = toJsonSchema(value, at, ignored);
    } else if (key === "anyOf") {
      if (!Array.isArray(value)) throw invalidField(at, "must be an array");
      out.anyOf = value.map((sub, i) => toJsonSchema(sub, `${at}[${i}]`, ignored));
    } else if (key === "example") {
      out.examples = [value];
    } else if (key === "propertyOrdering") {
      ignored.push(`${at} (Gemini generation-order hint)`);
    } else if (counts.has(key)) {
      out[key] = convertCount(value, at);
    } else if (copied.has(key)) {
      out[key] = value;
    } else {
      throw invalidField(at, "unsupported schema keyword");
    }
  }
  if (nullable && typeof out.type === "string") out.type = [out.type, "null"];
  return out;
}
