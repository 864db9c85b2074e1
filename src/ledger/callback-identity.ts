/**
 * The strongest call identity an MCP callback offers, read from the raw request
 * before schema validation, at the places the clients put it
 * (src/clients/call-identity.ts). See docs/design.md §5. Two different ids on one
 * callback are refused, not guessed.
 */
import { callIdLocations } from "../clients/call-identity.ts";
import { SidecarError } from "../lib/errors.ts";

export interface CallIdentity {
  readonly kind: "call_id";
  readonly value: string;
}

export function readCallbackIdentity(request: { meta?: unknown; args?: unknown }): CallIdentity | undefined {
  const meta = asRecord(request.meta);
  const args = asRecord(request.args);
  const offered = callIdLocations
    .map((location) => ({ where: location.where, value: location.read(meta, args) }))
    .filter((item) => item.value !== undefined);
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
