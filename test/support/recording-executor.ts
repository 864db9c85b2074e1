/**
 * A robot controller implementing docs/executor-api.md the way the document
 * tells a controller to (tests only): the Idempotency-Key names the job — the
 * same key is the same job, answered 200 with its job id, and never runs twice.
 * Each job's receipt says which episode and call it ran for, so a test can see
 * whose receipt a client got. Optional delays make acknowledgement and receipt
 * observable. `POST /jobs/{job_id}/stop` is logged (`stops`) and answered 200 for a
 * known job (its receipt then says it was stopped), 404 for an unknown one.
 */
export type ControllerJob = {
  jobId: string;
  key: string;
  body: { call_id: string; episode_id: string; tool: string; arguments: Record<string, unknown> };
};

export type ControllerReceipt = { ok: boolean; content: unknown[]; data?: Record<string, unknown> };

export function serveRecordingExecutor(
  options: {
    receiptDelayMs?: number;
    /** The receipt of a job (asked once per job); default: it says whose call it ran. */
    receipt?: (job: ControllerJob) => ControllerReceipt;
  } = {},
) {
  const receipts = new Map<string, ControllerReceipt>();
  const jobs = new Map<string, ControllerJob>();
  const submits: { key: string; status: number }[] = [];
  /** Every stop the sidecar asked for, in arrival order. */
  const stops: { jobId: string; body: { call_id: string; episode_id: string; reason: string } }[] = [];
  const stopped = new Set<string>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (req.method === "POST" && url.pathname === "/jobs") {
        const key = req.headers.get("idempotency-key") ?? "";
        const existing = jobs.get(key);
        if (existing) {
          submits.push({ key, status: 200 });
          return Response.json({ job_id: existing.jobId }, { status: 200 });
        }
        const job: ControllerJob = {
          jobId: `J-${jobs.size + 1}`,
          key,
          body: (await req.json()) as ControllerJob["body"],
        };
        jobs.set(key, job);
        submits.push({ key, status: 202 });
        return Response.json({ job_id: job.jobId }, { status: 202 });
      }
      const stop = /^\/jobs\/([^/]+)\/stop$/.exec(url.pathname);
      if (req.method === "POST" && stop) {
        const jobId = decodeURIComponent(stop[1] ?? "");
        stops.push({ jobId, body: (await req.json()) as (typeof stops)[number]["body"] });
        if (![...jobs.values()].some((j) => j.jobId === jobId))
          return new Response("unknown job", { status: 404 });
        stopped.add(jobId);
        return Response.json({ stopped: true });
      }
      const receipt = /^\/jobs\/([^/]+)\/receipt$/.exec(url.pathname);
      if (req.method === "GET" && receipt) {
        const job = [...jobs.values()].find((j) => j.jobId === decodeURIComponent(receipt[1] ?? ""));
        if (!job) return new Response("unknown job", { status: 404 });
        if (options.receiptDelayMs) {
          const until = Date.now() + options.receiptDelayMs;
          while (Date.now() < until && !stopped.has(job.jobId)) await Bun.sleep(20);
        }
        if (stopped.has(job.jobId))
          return Response.json({
            ok: false,
            content: [{ type: "text", text: "stopped" }],
            data: { stopped: true },
          });
        if (options.receipt) {
          const made = receipts.get(job.jobId) ?? options.receipt(job);
          receipts.set(job.jobId, made);
          return Response.json(made);
        }
        const ranFor = `ran ${job.body.tool} for episode ${job.body.episode_id} call ${job.body.call_id}`;
        return Response.json({
          ok: true,
          content: [{ type: "text", text: ranFor }],
          data: { ...(job.body.tool === "finish" ? { submitted: true } : {}), ran_for: ranFor },
        });
      }
      return new Response("no route", { status: 404 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    jobs,
    submits,
    stops,
    stop: () => server.stop(true),
  };
}
