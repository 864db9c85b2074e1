/**
 * Operator approval as the control API and the /ui page show and take it: the
 * pending calls of an episode (tool, arguments, the SHA-256 a decision binds to,
 * how long each has waited) and the decision body. Both surfaces go through
 * `decideApproval` here, so a decision is checked and journaled the same way
 * whoever makes it. See docs/approvals.md.
 */
import { z } from "zod";
import { describeZodError } from "../config/load-config.ts";
import type { Episode } from "../episodes/episode.ts";
import type { PendingApproval } from "../ledger/episode-ledger.ts";
import { SidecarError } from "../lib/errors.ts";

export const approvalDecisionSchema = z
  .object({
    decision: z.enum(["approve", "reject"]),
    /** Shown to the model with a rejection ("rejected by the operator: <reason>"). */
    reason: z.string().max(1000).optional(),
    /** The SHA-256 of the call's canonical arguments as listed; a different one is refused (409). */
    args_sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "64 lower-case hex characters")
      .optional(),
  })
  .strict()
  .refine((body) => body.decision === "approve" || (body.reason ?? "").trim() !== "", {
    message: "a rejection needs a reason (the model is told it)",
    path: ["reason"],
  });
export type ApprovalDecisionBody = z.infer<typeof approvalDecisionSchema>;

/** One pending call as GET /control/episodes/{id}/approvals lists it. */
export type PendingApprovalView = {
  call_id: string;
  tool: string;
  model_name: string;
  arguments: Readonly<Record<string, unknown>>;
  args_sha256: string;
  rule: string;
  requested_at: string;
  expires_at: string;
  waited_ms: number;
};

export function viewPendingApproval(pending: PendingApproval, now: number): PendingApprovalView {
  const { call } = pending;
  return {
    call_id: call.id,
    tool: call.tool,
    model_name: call.modelName,
    arguments: call.args,
    args_sha256: call.approval?.argsSha256 ?? "",
    rule: call.approval?.rule ?? "",
    requested_at: new Date(pending.requestedAt).toISOString(),
    expires_at: new Date(pending.expiresAt).toISOString(),
    waited_ms: Math.max(0, now - pending.requestedAt),
  };
}

/** Parses a decision body; a bad one is a 400 naming the field. */
export function parseApprovalDecision(body: unknown): ApprovalDecisionBody {
  const parsed = approvalDecisionSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new SidecarError("invalid_request", describeZodError(parsed.error).join("; "), {
    ...(issue && issue.path.length > 0 ? { param: issue.path.map(String).join(".") } : {}),
  });
}

/** Applies a decision to an episode's call; `conflict` when it changes nothing, `not_found` for an unknown call. */
export function decideApproval(
  episode: Episode,
  callId: string,
  body: ApprovalDecisionBody,
  by: "ui" | "api",
): { call_id: string; decision: "approve" | "reject"; status: string; by: "ui" | "api" } {
  const call = episode.ledger.decide(callId, {
    decision: body.decision,
    by,
    ...(body.reason === undefined ? {} : { reason: body.reason.trim() }),
    ...(body.args_sha256 === undefined ? {} : { argsSha256: body.args_sha256 }),
  });
  return { call_id: call.id, decision: body.decision, status: call.status, by };
}
