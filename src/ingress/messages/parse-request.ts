/**
 * Validates a Messages request body and turns the first problem into a 400 that
 * names the field in wire spelling (`messages[2].content[0].source.type`), so the
 * client's user sees exactly what this sidecar refused and why.
 */
import type { z } from "zod";
import { SidecarError } from "../../lib/errors.ts";
import { type MessagesRequest, messagesRequestSchema } from "./schema.ts";

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
    const param = issue.keys.map((key) => formatPath([...issue.path, key])).join(", ");
    return {
      param,
      message: `unknown field${issue.keys.length > 1 ? "s" : ""} ${param}: not part of the Anthropic Messages API this sidecar accepts`,
    };
  }
  return { param: at, message: `${at === "" ? "body" : at}: ${issue.message}` };
}

export function parseMessagesRequest(body: unknown): MessagesRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new SidecarError(
      "invalid_request",
      "request body must be a JSON object (Anthropic Messages request)",
    );
  }
  const parsed = messagesRequestSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  const described = parsed.error.issues.map(describeIssue);
  const first = described[0] ?? { param: "", message: "invalid request" };
  const more =
    described.length > 1
      ? ` (and ${described.length - 1} more: ${described
          .slice(1, 4)
          .map((d) => d.message)
          .join("; ")})`
      : "";
  throw new SidecarError(
    "invalid_request",
    `${first.message}${more}`,
    first.param === "" ? {} : { param: first.param },
  );
}
