/**
 * MCP progress notifications for a `tools/call` the sidecar holds while the robot
 * works (https://modelcontextprotocol.io/specification/2025-11-25/basic/utilities/progress).
 * Only for a call whose client sent `_meta.progressToken`: one notification on each
 * state change of the call, and one every interval while the state stays the same,
 * each with a progress one higher than the last and a message naming the state. No
 * total: how long a robot action takes is unknown. Once stopped (the result is
 * about to be sent), nothing more is sent. Which clients reset which timeout on
 * progress: docs/clients.md.
 */

/** Where a held call is; the order in which handleToolCall passes through them. */
export type ToolCallState = "admitting" | "awaiting_approval" | "submitting" | "acknowledged";

export type ProgressToken = string | number;

/** `notifications/progress` params as the sidecar writes them. */
export type ProgressParams = { progressToken: ProgressToken; progress: number; message: string };

export type ToolCallProgress = {
  /** The call entered a state (jobId once the executor acknowledged it). */
  enter(state: ToolCallState, jobId?: string): void;
  /** No notification after this; idempotent. */
  stop(): void;
};

export type ToolCallProgressOptions = {
  /** The client's `_meta.progressToken`; none (or not a string or number) = no notifications. */
  token: unknown;
  /** Between two notifications of one state; 0 = on state changes only. */
  intervalMs: number;
  send: (params: ProgressParams) => void;
  clock: () => number;
  /** Calls tick every ms until the returned function is called (setInterval by default). */
  every?: (ms: number, tick: () => void) => () => void;
};

const silent: ToolCallProgress = { enter: () => {}, stop: () => {} };

export function readProgressToken(token: unknown): ProgressToken | undefined {
  if (typeof token === "string" && token !== "") return token;
  if (typeof token === "number" && Number.isFinite(token)) return token;
  return undefined;
}

export function describeToolCallState(state: ToolCallState, elapsedMs: number, jobId?: string): string {
  const seconds = `${Math.floor(elapsedMs / 1000)} s`;
  switch (state) {
    case "admitting":
      return `admitting: waiting for this call's delivery and for the earlier calls of its batch (${seconds})`;
    case "awaiting_approval":
      return `awaiting an operator's approval (${seconds})`;
    case "submitting":
      return `submitting to the robot controller (${seconds})`;
    case "acknowledged":
      return `acknowledged by the robot controller${jobId ? ` as job ${jobId}` : ""}, waiting for its receipt (${seconds})`;
    default: {
      const never: never = state;
      return never;
    }
  }
}

const everyInterval = (ms: number, tick: () => void): (() => void) => {
  const timer = setInterval(tick, ms);
  return () => clearInterval(timer);
};

export function createToolCallProgress(options: ToolCallProgressOptions): ToolCallProgress {
  const token = readProgressToken(options.token);
  if (token === undefined) return silent;
  const started = options.clock();
  let progress = 0;
  let stopped = false;
  let current: { state: ToolCallState; jobId?: string } | undefined;
  let cancelTicks: (() => void) | undefined;

  const notify = () => {
    if (stopped || current === undefined) return;
    progress += 1;
    const message = describeToolCallState(current.state, options.clock() - started, current.jobId);
    options.send({ progressToken: token, progress, message });
  };

  return {
    enter(state, jobId) {
      if (stopped) return;
      current = jobId === undefined ? { state } : { state, jobId };
      cancelTicks?.();
      cancelTicks = undefined;
      notify();
      if (options.intervalMs > 0) cancelTicks = (options.every ?? everyInterval)(options.intervalMs, notify);
    },
    stop() {
      stopped = true;
      cancelTicks?.();
      cancelTicks = undefined;
    },
  };
}
