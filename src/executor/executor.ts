/**
 * What the MCP server needs from whatever runs robot work: submit a job (the
 * promise resolves with the acknowledgement, i.e. a job id), then wait for its
 * receipt. The job key (episode id + the model's call id) is the idempotency key:
 * submitting the same call twice must name the same job. The call id alone is
 * not enough: it is unique only within an episode, and an upstream may repeat
 * ids across episodes. An executor may also offer `stop`: asked to stop a job in
 * flight when its episode is abandoned (cancel, client gone, deadline, shutdown drain
 * overrun; per manifest, off by default). See docs/executor-api.md and docs/design.md §7.
 */
import { z } from "zod";
import type { StopReason } from "../ledger/events.ts";

export const toolContentSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("image"), data: z.string().min(1), mimeType: z.string().min(1) }),
]);
export type ToolContent = z.infer<typeof toolContentSchema>;

/** The executor's final word on a job: what the CLI sees (`content`) and what the records keep (`data`). */
export const receiptSchema = z.object({
  ok: z.boolean(),
  content: z.array(toolContentSchema).default([]),
  data: z.unknown().optional(),
});
export type Receipt = z.infer<typeof receiptSchema>;

export const acknowledgementSchema = z.object({ job_id: z.string().min(1) });

/** The idempotency key of a job: unique across episodes, the same for every attempt. */
export function jobKey(episodeId: string, callId: string): string {
  return `${episodeId}/${callId}`;
}

export type ExecutorJob = {
  /** The model's call id, unique within its episode only; `jobKey` makes the idempotency key. */
  callId: string;
  episodeId: string;
  /** Manifest tool name and its executor route. */
  tool: string;
  route: string;
  mode: "foreground" | "background";
  arguments: Record<string, unknown>;
};

export type Acknowledgement = { jobId: string };

/** Why the sidecar asks the controller to stop an episode's jobs in flight (one schema: the journal's). */
export type { StopReason };

/** The job to stop, as the executor acknowledged it. */
export type StopJob = { jobId: string; callId: string; episodeId: string };

/** The controller's answer to a stop, as journaled: its HTTP status (null: no answer), whether it stopped, its words. */
export type StopAnswer = { status: number | null; stopped: boolean; detail: string };

export interface Executor {
  /** Resolves once the executor accepted the job (acknowledgement); rejects if it refused or could not be reached. */
  submit(job: ExecutorJob): Promise<Acknowledgement>;
  /** Resolves with the job's receipt; rejects if none arrives (timeout, executor unreachable). */
  receipt(jobId: string): Promise<Receipt>;
  /** Asks the executor to stop a job in flight; never rejects (an unreachable controller is an answer too). */
  stop?(job: StopJob, reason: StopReason): Promise<StopAnswer>;
}
