/**
 * Stopping an episode's robot work when nobody is left to want it: when the
 * episode is cancelled, when its deadline passes, when a shutdown drain overruns,
 * and when its client is gone — no model request and no MCP request open for
 * longer than the manifest's `stop.abandon_grace_ms` while a job is in flight.
 * For each acknowledged job without a receipt the ledger journals `stop_requested`,
 * the executor's optional `stop` is asked once (docs/executor-api.md), and its
 * answer is journaled as `stop_answered`. Off unless the manifest has `stop`.
 */
import type { Executor, StopReason } from "../executor/executor.ts";
import type { EpisodeLedger } from "../ledger/episode-ledger.ts";
import { errorMessage } from "../lib/error-message.ts";

export interface JobStopper {
  /** Asks the executor to stop every job in flight not asked before; resolves once each answered. */
  stopJobs(reason: StopReason): Promise<void>;
  /** The client made a request (model or MCP): it is still there. */
  clientSeen(): void;
  /** An MCP request began; call the returned function when its answer ended (or the client left). */
  mcpRequestOpened(): () => void;
  /** Whether the manifest asks for stops at all. */
  readonly enabled: boolean;
  /** No more abandonment checks (the episode ended). */
  dispose(): void;
}

export type JobStopperOptions = {
  episodeId: string;
  ledger: EpisodeLedger;
  executor: Executor;
  /** The manifest's `stop`; absent = never stop anything. */
  policy: { abandon_grace_ms: number } | undefined;
  clock: () => number;
  /** Model exchanges in flight (a client waiting for its answer is not gone). */
  exchangesInFlight: () => number;
  warn?: (message: string, fields: Record<string, unknown>) => void;
};

export function createJobStopper(options: JobStopperOptions): JobStopper {
  const { ledger, policy } = options;
  /** Calls whose job was asked to stop already (once each, whatever the reason). */
  const asked = new Set<string>();
  let lastSeen = options.clock();
  let mcpOpen = 0;

  async function stopJobs(reason: StopReason): Promise<void> {
    if (policy === undefined) return;
    const jobs = ledger.jobsInFlight().filter((job) => !asked.has(job.callId));
    await Promise.all(
      jobs.map(async ({ callId, jobId }) => {
        asked.add(callId);
        try {
          ledger.stopRequested(callId, reason);
        } catch (error) {
          // A journal that fails stops nothing: a stop that is not on record is not asked.
          const message = errorMessage(error);
          options.warn?.("stop not journaled; not asked", {
            episode: options.episodeId,
            call: callId,
            message,
          });
          return;
        }
        const answer = options.executor.stop
          ? await options.executor.stop({ jobId, callId, episodeId: options.episodeId }, reason)
          : { status: null, stopped: false, detail: "the executor offers no stop" };
        try {
          ledger.stopAnswered(callId, reason, answer);
        } catch (error) {
          const message = errorMessage(error);
          options.warn?.("stop answer not journaled", { episode: options.episodeId, call: callId, message });
        }
      }),
    );
  }

  const abandoned = () =>
    policy !== undefined &&
    mcpOpen === 0 &&
    options.exchangesInFlight() === 0 &&
    options.clock() - lastSeen >= policy.abandon_grace_ms &&
    ledger.jobsInFlight().some((job) => !asked.has(job.callId));

  const timer =
    policy === undefined
      ? undefined
      : setInterval(
          () => {
            if (abandoned()) void stopJobs("abandoned");
          },
          Math.min(1_000, Math.max(25, Math.floor(policy.abandon_grace_ms / 4))),
        );
  timer?.unref();

  return {
    stopJobs,
    clientSeen: () => {
      lastSeen = options.clock();
    },
    mcpRequestOpened() {
      mcpOpen += 1;
      lastSeen = options.clock();
      let open = true;
      return () => {
        if (!open) return;
        open = false;
        mcpOpen -= 1;
        lastSeen = options.clock();
      };
    },
    enabled: policy !== undefined,
    dispose: () => clearInterval(timer),
  };
}
