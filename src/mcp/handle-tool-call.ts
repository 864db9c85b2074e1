/**
 * One MCP `tools/call` of an episode, from raw params to the MCP result:
 *   identity (raw `_meta` / `_callID`, read before anything else) → strip the
 *   clients' private arguments → ledger admission (a callback that matches no
 *   delivered, unclaimed call is refused and journaled by the ledger; the tool's
 *   input schema, then its rate limit and approval, docs/approvals.md, may refuse or
 *   hold it there) → executor submit → acknowledgement → receipt.
 * Foreground tools answer with the receipt; background tools answer on
 * acknowledgement and their receipt is journaled when it arrives. A finish
 * receipt with `submitted: true` finishes the episode. Nothing refused ever
 * reaches the executor. See docs/design.md §5–§7, docs/clients.md.
 */

import { detectClient } from "../clients/detect-client.ts";
import { withoutPrivateArguments } from "../clients/private-arguments.ts";
import type { Episode } from "../episodes/episode.ts";
import type { Receipt, ToolContent } from "../executor/executor.ts";
import { readCallbackIdentity } from "../ledger/callback-identity.ts";
import type { Admission } from "../ledger/episode-ledger.ts";
import { errorMessage } from "../lib/error-message.ts";
import { toSidecarError } from "../lib/errors.ts";
import type { Logger } from "../lib/logger.ts";
import { failedResult, type ToolCallResult } from "./failed-result-form.ts";
import type { ToolCallState } from "./tool-call-progress.ts";
import type { ArgumentsCheck } from "./tool-validators.ts";

/** `tools/call` params as the client sent them. */
export type ToolCallParams = {
  name: string;
  arguments?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
};
export type { ToolCallResult };

export type ToolCallContext = {
  episode: Episode;
  checks: ReadonlyMap<string, ArgumentsCheck>;
  logger: Logger;
  /** Told each state the call enters while it is held (progress notifications). */
  onState?: (state: ToolCallState, jobId?: string) => void;
  /** Aborts when the client no longer waits for this call (it cancelled it, its session closed). */
  withdrawn?: AbortSignal;
};

const errorResult = (text: string, images: ToolContent[] = []): ToolCallResult => ({
  isError: true,
  content: [{ type: "text", text }, ...images],
});

export async function handleToolCall(ctx: ToolCallContext, params: ToolCallParams): Promise<ToolCallResult> {
  const { episode } = ctx;
  const rawArgs = params.arguments ?? {};
  const log = ctx.logger.child({ episode: episode.id, tool: params.name });
  const refuse = (reason: string): ToolCallResult => {
    episode.toolCallRefused();
    log.warn("tool call refused", { reason });
    return errorResult(`ura refused this tool call; it was not executed: ${reason}`);
  };

  let identity: ReturnType<typeof readCallbackIdentity>;
  try {
    identity = readCallbackIdentity({ meta: params._meta, args: rawArgs });
  } catch (error) {
    return refuse(toSidecarError(error).message);
  }
  const tool = episode.manifest.tools.find((t) => t.name === params.name);
  const args = withoutPrivateArguments(rawArgs);
  const argumentsProblem = (): string | undefined => {
    // Unreachable while the ledger only registers manifest tools; kept so a bad registration cannot reach the executor.
    if (tool === undefined) return `no tool ${JSON.stringify(params.name)} in this episode's manifest`;
    const check = ctx.checks.get(tool.name)?.(args) ?? { valid: true };
    return check.valid
      ? undefined
      : `arguments do not match the input schema of ${tool.name}: ${check.message}`;
  };

  let admission: Admission;
  ctx.onState?.("admitting");
  try {
    admission = await episode.ledger.admit(
      { tool: params.name, args, ...(identity ? { identity } : {}) },
      {
        // The input schema first: an operator is never asked about a call that could not run.
        precheck: () => argumentsProblem(),
        onApprovalRequested: () => ctx.onState?.("awaiting_approval"),
        ...(ctx.withdrawn ? { withdrawn: ctx.withdrawn } : {}),
      },
    );
  } catch (error) {
    return refuse(toSidecarError(error).message);
  }
  const callId = admission.call.id;
  // Checked by the ledger before it admitted the call (precheck); narrows the type here.
  if (tool === undefined) {
    admission.failed(`no tool ${params.name} in the manifest`);
    return refuse(`no tool ${JSON.stringify(params.name)} in this episode's manifest`);
  }

  episode.toolCallAdmitted();
  log.info("tool call admitted", { call: callId, claimed_by: admission.call.claimedBy });

  let jobId: string;
  try {
    admission.submitted();
    ctx.onState?.("submitting");
    ({ jobId } = await episode.executor.submit({
      callId,
      episodeId: episode.id,
      tool: tool.name,
      route: tool.route,
      mode: tool.mode,
      arguments: args,
    }));
    admission.acknowledged(jobId);
    ctx.onState?.("acknowledged", jobId);
  } catch (error) {
    const reason = `the executor did not accept the job: ${toSidecarError(error).message}`;
    safely(() => admission.failed(reason), log);
    return errorResult(`tool call ${callId} failed: ${reason}`);
  }

  const finished = episode.track(
    episode.executor.receipt(jobId).then(
      (receipt) => {
        safely(() => admission.receipt(journalView(receipt)), log);
        if (
          tool.name === episode.manifest.finish_tool &&
          isRecord(receipt.data) &&
          receipt.data.submitted === true
        ) {
          episode.finish(receipt.data);
        }
        return receipt;
      },
      (error: unknown) => {
        const reason = `no receipt for job ${jobId}: ${toSidecarError(error).message}`;
        safely(() => admission.failed(reason), log);
        throw new Error(reason);
      },
    ),
  );

  if (tool.mode === "background") {
    finished.catch((error: Error) =>
      log.warn("background job failed", { call: callId, job: jobId, reason: error.message }),
    );
    return {
      content: [
        {
          type: "text",
          text: `accepted: job ${jobId} runs in the background; its receipt is recorded when it arrives`,
        },
      ],
    };
  }
  let receipt: Receipt;
  try {
    receipt = await finished;
  } catch (error) {
    return errorResult(`tool call ${callId} failed: ${errorMessage(error)}`);
  }
  const content =
    receipt.content.length > 0
      ? receipt.content
      : [{ type: "text" as const, text: receipt.ok ? "done" : "failed" }];
  if (receipt.ok) return { content };
  return failedResult(episode.client ?? detectClient(episode.mcp.user_agent, "mcp")?.client, content);
}

/** The receipt as the journal keeps it: image bytes replaced by their size. */
function journalView(receipt: Receipt): Record<string, unknown> {
  return {
    ok: receipt.ok,
    content: receipt.content.map((part) =>
      part.type === "image"
        ? { type: "image", mimeType: part.mimeType, base64_chars: part.data.length }
        : part,
    ),
    data: receipt.data ?? null,
  };
}

function safely(step: () => void, log: Logger): void {
  try {
    step();
  } catch (error) {
    log.error("ledger journal step failed", { message: errorMessage(error) });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
