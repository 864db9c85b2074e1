/**
 * The strongest call identity an MCP callback offers, read from the raw request
 * before schema validation (the SDK strips unknown keys): Claude Code's
 * `_meta["claudecode/toolUseId"]`, Codex's `_meta.callId`, or the `_callID`
 * argument our OpenCode plugin adds. Gemini CLI offers none. See docs/clients.md and
 * docs/design.md §5. Two different ids on one callback are refused, not guessed.
 */
import { SidecarError } from "../lib/errors.ts";

export interface CallIdentity {
  readonly kind: "call_id";
  readonly value: string;
}

export function readCallbackIdentity(request: { meta?: unknown; args?: unknown }): CallIdentity | undefined {
  const meta = asRecord(request.meta);
  const args = asRecord(request.args);
  const offered = [
    { where: '_meta["claudecode/toolUseId"]', value: meta?.["claudecode/toolUseId"] },
    { where: "_meta.callId", value: meta?.callId },
    { where: "arguments._callID", value: args?._callID },
  ].filter((item) => item.value !== undefined);
  for (const item of offered) {
    if (typeof item.value !== "string" || item.value === "") {
      throw new SidecarError("invalid_request", `${item.where} must be a non-empty string`, {
        param: item.where,
      });
    }
  }
  const values = new Set(offered.map((item) => item.value as string));
  if (values.size > 1) {
    throw new SidecarError(
      "invalid_request",
      `the callback names different call ids: ${[...values].join(", ")}`,
    );
  }
  const [value] = values;
  return value === undefined ? undefined : { kind: "call_id", value };
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
