/**
 * Parses a client's value against a protocol's zod schema and turns the first
 * zod issue into a 400 naming the field in wire spelling
 * (`input[3].content[0].type`, `contents[2].parts[0].fileData`), so the client's
 * user sees exactly what the sidecar could not honour. Used by every ingress.
 */
import type { z } from "zod";
import type { JsonBody } from "../body/parse-json-body.ts";
import { invalidField, SidecarError } from "../lib/errors.ts";
import { deepFreeze } from "../lib/frozen-json.ts";
import type { FrozenMemos } from "../lib/frozen-memos.ts";

type Issue = z.core.$ZodIssue;

/** `["input", 0, "content", 1]` → `input[0].content[1]` (appended to a prefix). */
export function formatPath(path: readonly PropertyKey[], prefix = ""): string {
  let out = prefix;
  for (const key of path)
    out += typeof key === "number" ? `[${key}]` : out === "" ? String(key) : `.${String(key)}`;
  return out;
}

/**
 * A union of a string and an array (`input`, `content`, `output`) reports one issue
 * per branch, with paths relative to the union: follow the branch that got further
 * than a wrong type at its root, so the message names the innermost field.
 */
function innermost(issue: Issue, base: PropertyKey[]): { issue: Issue; path: PropertyKey[] } {
  const path = [...base, ...issue.path];
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return { issue, path };
  const branches = issue.errors.map((branch) => branch[0]).filter((i): i is Issue => i !== undefined);
  const deeper = branches.find((i) => !(i.code === "invalid_type" && i.path.length === 0));
  return deeper ? innermost(deeper, path) : { issue, path };
}

function describeIssue(top: Issue, prefix: string): SidecarError {
  const { issue, path } = innermost(top, []);
  if (issue.code === "unrecognized_keys") {
    const param = issue.keys.map((key) => formatPath([...path, key], prefix)).join(", ");
    return invalidField(param, "unknown field; this endpoint does not support it");
  }
  const param = formatPath(path, prefix) || "body";
  if (issue.code === "invalid_union" && "options" in issue) {
    return invalidField(param, `unsupported value; expected one of ${JSON.stringify(issue.options)}`);
  }
  return invalidField(param, issue.message);
}

/** Parses `value` with `schema`, throwing a SidecarError that names the field under `prefix`. */
export function parseAt<S extends z.ZodType>(schema: S, value: unknown, prefix: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  // An unknown field explains more than the required field it was probably sent instead of.
  const issues = parsed.error.issues;
  const issue = issues.find((i) => i.code === "unrecognized_keys") ?? issues[0];
  if (!issue) throw invalidField(prefix || "body", "invalid value");
  throw describeIssue(issue, prefix);
}

/** Whether the schema may leave the member out (kept per schema in the episode's memos). */
function optionalMember(memos: FrozenMemos, schema: z.ZodObject, key: string): boolean {
  const optionalMembers = memos.table<z.ZodObject, Map<string, boolean>>(optionalMember);
  let known = optionalMembers.get(schema);
  if (known === undefined) {
    known = new Map();
    optionalMembers.set(schema, known);
  }
  let optional = known.get(key);
  if (optional === undefined) {
    optional = schema.shape[key]?.safeParse(undefined).success === true;
    known.set(key, optional);
  }
  return optional;
}

/**
 * parseAt for a whole request object: a member the client repeated verbatim from
 * an earlier turn (the episode's memos know it: isRepeated) and that passed validation
 * then is not validated again. An object schema checks each member on its own, so a valid
 * member adds no issue and the rest gives the same first issue, field and message.
 * Without memos (a body parsed without the episode's repeated members) it is parseAt.
 */
export function parseRequestAt<S extends z.ZodObject>(
  schema: S,
  request: Record<string, unknown>,
  prefix: string,
  memos?: FrozenMemos,
): z.infer<S> {
  if (memos === undefined) return parseAt(schema, request, prefix);
  const history = historyOf(schema, request);
  if (history === undefined) return validateMembers(memos, schema, request, prefix);
  const { key, element, items } = history;
  // Per element schema: each reused history item (frozen) → what validation made of it.
  const known = memos.table<object, unknown>(element);
  const outputs: unknown[] = [];
  for (const item of items) {
    const output = isFrozenObject(item) ? known.get(item) : undefined;
    if (output === undefined) break;
    outputs.push(output);
  }
  if (outputs.length > 0) {
    try {
      const parsed = validateMembers(
        memos,
        schema,
        { ...request, [key]: items.slice(outputs.length) },
        prefix,
      ) as Record<string, unknown>;
      parsed[key] = [...outputs, ...(parsed[key] as unknown[])];
      rememberItems(known, items, parsed[key] as unknown[]);
      return parsed as z.infer<S>;
    } catch {
      // Validated again whole, as it came: the error is the one the full path gives.
    }
  }
  const parsed = validateMembers(memos, schema, request, prefix) as Record<string, unknown>;
  rememberItems(known, items, parsed[key] as unknown[]);
  return parsed as z.infer<S>;
}

function isFrozenObject(value: unknown): value is object {
  return value !== null && typeof value === "object" && Object.isFrozen(value);
}

/** The request's history: an array member whose schema checks items one by one (itemSchemaOf), its first item reused (frozen). */
function historyOf(
  schema: z.ZodObject,
  request: Record<string, unknown>,
): { key: string; element: z.ZodType; items: unknown[] } | undefined {
  if ((schema.def.checks?.length ?? 0) > 0) return undefined;
  for (const key of Object.keys(request)) {
    const items = request[key];
    if (!Array.isArray(items) || Object.isFrozen(items) || !isFrozenObject(items[0])) continue;
    const element = itemSchemaOf(schema.shape[key] as z.ZodType | undefined);
    if (element !== undefined) return { key, element, items };
  }
  return undefined;
}

/**
 * The item schema of a history member whose items are checked one by one: an array with
 * at most a minimum length (a longer array meets it too), or a union of such an array with
 * strings only (an array then always takes the array branch, as Responses' `input`).
 */
function itemSchemaOf(member: z.ZodType | undefined): z.ZodType | undefined {
  if (member === undefined) return undefined;
  const def = member.def as { type: string; checks?: { _zod: { def: { check: string } } }[] };
  if (def.type === "array") {
    const perItem = (def.checks ?? []).every((check) => check._zod.def.check === "min_length");
    return perItem ? (member as unknown as z.ZodArray<z.ZodType>).element : undefined;
  }
  if (def.type !== "union") return undefined;
  const options = (member as unknown as z.ZodUnion<z.ZodType[]>).options;
  const arrays = options.filter((option) => option.def.type === "array");
  const others = options.filter((option) => option.def.type !== "array");
  if (arrays.length !== 1 || !others.every((option) => option.def.type === "string")) return undefined;
  return itemSchemaOf(arrays[0]);
}

/**
 * Keeps each reused history item (frozen by the parse, parse-json-body.ts) that passed
 * validation, with what validation made of it: a later request that repeats it validates
 * only its new items. An array schema checks each item on its own, so a valid item adds
 * no issue; the request must still validate, else it is validated again whole.
 */
function rememberItems(known: WeakMap<object, unknown>, items: unknown[], outputs: unknown[]): void {
  items.forEach((item, i) => {
    if (isFrozenObject(item) && !known.has(item)) known.set(item, deepFreeze(outputs[i]));
  });
}

function validateMembers<S extends z.ZodObject>(
  memos: FrozenMemos,
  schema: S,
  request: Record<string, unknown>,
  prefix: string,
): z.infer<S> {
  // Per request schema: a repeated member's value → its validated (frozen) form.
  const validatedMembers = memos.table<z.ZodObject, WeakMap<object, unknown>>(validateMembers);
  let validated = validatedMembers.get(schema);
  if (validated === undefined) {
    validated = new WeakMap();
    validatedMembers.set(schema, validated);
  }
  let rest = request;
  const reused: [string, unknown][] = [];
  const fresh: [string, object][] = [];
  for (const key of Object.keys(request)) {
    const value = request[key];
    // Left out by setting it undefined: only a member the schema may leave out.
    if (!memos.isRepeated(value) || !optionalMember(memos, schema, key)) continue;
    if (!validated.has(value)) {
      fresh.push([key, value]);
      continue;
    }
    if (rest === request) rest = { ...request };
    rest[key] = undefined;
    reused.push([key, validated.get(value)]);
  }
  if (reused.length === 0 && fresh.length === 0) return parseAt(schema, request, prefix);
  const parsed = parseAt(schema, rest, prefix) as Record<string, unknown>;
  for (const [key, value] of reused) parsed[key] = value;
  for (const [key, value] of fresh) validated.set(value, deepFreeze(parsed[key]));
  return parsed as z.infer<S>;
}

/** The request object of a received body: a 400 when it is not JSON, or not a JSON object. */
export function requestObject(body: JsonBody, protocolName: string): Record<string, unknown> {
  if (!body.parsed) throw new SidecarError("invalid_request", body.reason, { param: "body" });
  const value = body.value;
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw invalidField("body", `the request body must be a JSON object (${protocolName} request)`);
  return value as Record<string, unknown>;
}

/**
 * A protocol's whole request body validated against its schema: the body must be a
 * JSON object (`requestObject`), then `parseRequestAt` with the episode's memos.
 */
export function parseRequestBody<S extends z.ZodObject>(
  schema: S,
  body: JsonBody,
  protocolName: string,
): z.infer<S> {
  return parseRequestAt(schema, requestObject(body, protocolName), "", body.parsed ? body.memos : undefined);
}
