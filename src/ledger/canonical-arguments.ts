/**
 * Canonical form of a tool call's arguments, so a callback can be matched to the
 * call the model delivered without depending on key order or whitespace.
 * Object keys are sorted recursively; at the top level the keys that clients add
 * on their side (src/clients/private-arguments.ts) are dropped.
 */
import { isPrivateArgumentKey } from "../clients/private-arguments.ts";
import { SidecarError } from "../lib/errors.ts";

/** JSON text of `args` with keys sorted recursively and private top-level keys removed. */
export function canonicalArguments(args: unknown): string {
  if (isPlainObject(args)) {
    const kept = Object.keys(args).filter((key) => !isPrivateArgumentKey(key));
    return encodeObject(args, kept, "");
  }
  return encode(args, "");
}

/** SHA-256 (hex) of a canonical arguments text: what an operator's approval is bound to. */
export function argumentsSha256(canonical: string): string {
  return new Bun.CryptoHasher("sha256").update(canonical).digest("hex");
}

function encode(value: unknown, path: string): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw notJson(path, "a non-finite number");
      return JSON.stringify(value);
    case "string":
      return JSON.stringify(value);
    case "object":
      if (Array.isArray(value)) return `[${value.map((item, i) => encode(item, `${path}[${i}]`)).join(",")}]`;
      if (isPlainObject(value)) return encodeObject(value, Object.keys(value), path);
      throw notJson(path, "a non-plain object");
    default:
      throw notJson(path, `a ${typeof value}`);
  }
}

function encodeObject(value: Record<string, unknown>, keys: string[], path: string): string {
  const members = keys
    .filter((key) => value[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${encode(value[key], path === "" ? key : `${path}.${key}`)}`);
  return `{${members.join(",")}}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function notJson(path: string, what: string): SidecarError {
  const where = path === "" ? "arguments" : `arguments.${path}`;
  return new SidecarError("invalid_request", `${where} is ${what}, not a JSON value`, { param: where });
}
