/**
 * Executor client for a real robot controller over HTTP (contract:
 * docs/executor-api.md). Submission is idempotent on the job key (episode id +
 * call id, `jobKey`), so a submit
 * whose answer was lost (network error, 5xx) is retried with the same key and
 * can never start the job twice. Receipts are long-polled until they arrive or
 * `receiptTimeoutMs` passes. `stop` asks the controller once, within `timeoutMs`,
 * to stop a job in flight (POST {url}/jobs/{job_id}/stop); whatever it answers (or
 * not) is the answer the sidecar journals.
 */

import { errorMessage } from "../lib/error-message.ts";
import { SidecarError } from "../lib/errors.ts";
import {
  type Acknowledgement,
  acknowledgementSchema,
  type Executor,
  type ExecutorJob,
  jobKey,
  type Receipt,
  receiptSchema,
  type StopAnswer,
  type StopJob,
  type StopReason,
} from "./executor.ts";

export type HttpExecutorOptions = {
  url: string;
  timeoutMs: number;
  receiptTimeoutMs: number;
  pollWaitMs: number;
  /** Submission attempts in total (same idempotency key each time); config `submit_attempts`. */
  submitAttempts: number;
  /** Failed receipt polls in a row before the call fails; config `receipt_attempts`. */
  receiptAttempts: number;
  /** Back-off base (n × this after the n-th failure) and short-poll pause; config `retry_delay_ms`. */
  retryDelayMs: number;
  fetch?: typeof fetch;
  clock?: () => number;
};

export function createHttpExecutor(options: HttpExecutorOptions): Executor {
  const doFetch = options.fetch ?? fetch;
  const clock = options.clock ?? Date.now;
  const root = options.url.replace(/\/+$/, "");
  const attempts = options.submitAttempts;
  const retryDelay = options.retryDelayMs;

  async function request(url: string, init: RequestInit, timeoutMs: number): Promise<Response> {
    return doFetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  }

  async function submit(job: ExecutorJob): Promise<Acknowledgement> {
    const key = jobKey(job.episodeId, job.callId);
    const body = JSON.stringify({
      idempotency_key: key,
      call_id: job.callId,
      episode_id: job.episodeId,
      tool: job.tool,
      route: job.route,
      mode: job.mode,
      arguments: job.arguments,
    });
    let lastProblem = "";
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let response: Response;
      try {
        response = await request(
          `${root}/jobs`,
          {
            method: "POST",
            headers: { "content-type": "application/json", "idempotency-key": key },
            body,
          },
          options.timeoutMs,
        );
      } catch (error) {
        lastProblem = `executor unreachable: ${errorMessage(error)}`;
        if (attempt < attempts) await Bun.sleep(retryDelay * attempt);
        continue;
      }
      const text = await response.text();
      if (response.status === 200 || response.status === 202) {
        const parsed = acknowledgementSchema.safeParse(safeJson(text));
        if (!parsed.success)
          throw new SidecarError("internal", `executor acknowledged without a job_id: ${text.slice(0, 200)}`);
        return { jobId: parsed.data.job_id };
      }
      lastProblem = `executor answered HTTP ${response.status}: ${text.slice(0, 300)}`;
      if (response.status < 500)
        throw new SidecarError("invalid_request", `executor refused the job: ${lastProblem}`);
      if (attempt < attempts) await Bun.sleep(retryDelay * attempt);
    }
    throw new SidecarError("unavailable", `job not acknowledged after ${attempts} attempts (${lastProblem})`);
  }

  async function receipt(jobId: string): Promise<Receipt> {
    const deadline = clock() + options.receiptTimeoutMs;
    const url = `${root}/jobs/${encodeURIComponent(jobId)}/receipt`;
    let failures = 0;
    while (clock() < deadline) {
      const waitMs = Math.max(0, Math.min(options.pollWaitMs, deadline - clock()));
      let response: Response;
      try {
        response = await request(`${url}?wait_ms=${waitMs}`, { method: "GET" }, waitMs + options.timeoutMs);
      } catch (error) {
        failures += 1;
        if (failures >= options.receiptAttempts)
          throw new SidecarError(
            "unavailable",
            `receipt of job ${jobId} unreachable after ${failures} attempts: ${errorMessage(error)}`,
          );
        await Bun.sleep(retryDelay * failures);
        continue;
      }
      const text = await response.text();
      if (response.status === 200) {
        const parsed = receiptSchema.safeParse(safeJson(text));
        if (!parsed.success)
          throw new SidecarError(
            "internal",
            `executor sent a malformed receipt for job ${jobId}: ${text.slice(0, 200)}`,
          );
        return parsed.data;
      }
      if (response.status === 202 || response.status === 204) {
        failures = 0;
        if (waitMs === 0) await Bun.sleep(retryDelay);
        continue;
      }
      if (response.status >= 500) {
        failures += 1;
        if (failures >= options.receiptAttempts)
          throw new SidecarError(
            "unavailable",
            `receipt of job ${jobId}: executor answered HTTP ${response.status} ${failures} times in a row`,
          );
        await Bun.sleep(retryDelay * failures);
        continue;
      }
      throw new SidecarError(
        "invalid_request",
        `receipt of job ${jobId}: executor answered HTTP ${response.status}: ${text.slice(0, 300)}`,
      );
    }
    throw new SidecarError(
      "unavailable",
      `no receipt for job ${jobId} within ${options.receiptTimeoutMs} ms`,
    );
  }

  async function stop(job: StopJob, reason: StopReason): Promise<StopAnswer> {
    const key = jobKey(job.episodeId, job.callId);
    let response: Response;
    try {
      response = await request(
        `${root}/jobs/${encodeURIComponent(job.jobId)}/stop`,
        {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key },
          body: JSON.stringify({
            idempotency_key: key,
            call_id: job.callId,
            episode_id: job.episodeId,
            reason,
          }),
        },
        options.timeoutMs,
      );
    } catch (error) {
      const message = errorMessage(error);
      return { status: null, stopped: false, detail: `executor unreachable: ${message}` };
    }
    const text = (await response.text().catch(() => "")).slice(0, 300);
    const stopped = response.status === 200 || response.status === 202;
    return { status: response.status, stopped, detail: text };
  }

  return { submit, receipt, stop };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
