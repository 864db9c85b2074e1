/**
 * Validates a GenerateContent body against `schema.ts` and turns the first
 * problem into a 400 that names the field in wire spelling and dotted path
 * (`contents[2].parts[0].fileData`), so the client — or whoever reads the
 * records — knows exactly what the sidecar refused.
 */
import type { z } from "zod";
import { invalidField } from "../../lib/errors.ts";
import { type GenerateContentRequest, generateContentRequestSchema } from "./schema.ts";

export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (out, key) =>
      typeof key === "number" ? `${out}[${key}]` : out === "" ? String(key) : `${out}.${String(key)}`,
    "",
  );
}

function describeIssue(issue: z.core.$ZodIssue): { param: string; message: string } {
  const at = formatPath(issue.path);
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0] ?? "?";
    return {
      param: at === "" ? key : `${at}.${key}`,
      message: "unsupported field; the sidecar refuses it rather than ignore it",
    };
  }
  return { param: at === "" ? "(body)" : at, message: issue.message };
}

export function parseGenerateContentRequest(body: unknown): GenerateContentRequest {
  const parsed = generateContentRequestSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  // An unknown field explains more than the required field it was probably sent instead of.
  const issues = parsed.error.issues;
  const issue = issues.find((i) => i.code === "unrecognized_keys") ?? issues[0];
  if (!issue) throw invalidField("(body)", "invalid request");
  const { param, message } = describeIssue(issue);
  throw invalidField(param, message);
}
