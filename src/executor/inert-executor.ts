/**
 * The embedded inert executor, one per episode, so the binary runs alone:
 *   observe()          → a freshly generated solid-colour PNG (a palette colour) + "nonce: <n>"
 *   record({nonce})    → ok only for the nonce of the latest observation; refused
 *                        otherwise, with the latest frame (a failure that shows why)
 *   finish({answer})   → receipt data {submitted: true, correct: answer names the colour}
 * Jobs are acknowledged after `ackDelayMs` and complete `receiptDelayMs` later;
 * every receipt carries its timing (`data.timing`) so tests can see the order
 * and spacing in which the MCP server submitted work. `stop` ends a job whose
 * receipt is still to come: its receipt is then a failure saying it was stopped.
 * See docs/design.md §7.
 */
import { randomBytes } from "node:crypto";
import { solidColourPng } from "../images/generate-png.ts";
import { SidecarError } from "../lib/errors.ts";
import type {
  Acknowledgement,
  Executor,
  ExecutorJob,
  Receipt,
  StopAnswer,
  StopJob,
  StopReason,
} from "./executor.ts";
import { inertPalette, type PaletteColour, paletteColours } from "./inert-palette.ts";

export type InertExecutorOptions = {
  clock?: () => number;
  /** Uniform in [0, 1); picks the colour. */
  random?: () => number;
  newNonce?: () => string;
  ackDelayMs?: number;
  receiptDelayMs?: number;
  /** Size of the observed frames (default 64 × 48). */
  frame?: { width: number; height: number };
};

export type InertJobLog = {
  seq: number;
  jobId: string;
  callId: string;
  route: string;
  submitted_at: number;
  acknowledged_at: number;
};

export type InertExecutor = Executor & {
  /** Every accepted job, in submission order. */
  jobs(): readonly InertJobLog[];
  /** The colour of the latest observation. */
  currentColour(): PaletteColour | undefined;
};

export function createInertExecutor(options: InertExecutorOptions = {}): InertExecutor {
  const clock = options.clock ?? Date.now;
  const random = options.random ?? Math.random;
  const newNonce = options.newNonce ?? (() => randomBytes(6).toString("hex"));
  const ackDelay = options.ackDelayMs ?? 0;
  const receiptDelay = options.receiptDelayMs ?? 0;
  const frame = options.frame ?? { width: 64, height: 48 };
  let observation: { colour: PaletteColour; nonce: string; n: number; png: string } | undefined;
  let observations = 0;
  const log: InertJobLog[] = [];
  const byCall = new Map<string, string>();
  const receipts = new Map<string, Promise<Receipt>>();
  /** Jobs whose receipt is still to come, and how to end them early. */
  const running = new Map<string, (reason: StopReason) => void>();

  function run(job: ExecutorJob): Receipt {
    switch (job.route) {
      case "observe": {
        observations += 1;
        const colour = paletteColours[Math.floor(random() * paletteColours.length)] ?? "red";
        const png = Buffer.from(solidColourPng(frame.width, frame.height, inertPalette[colour])).toString(
          "base64",
        );
        observation = { colour, nonce: newNonce(), n: observations, png };
        return {
          ok: true,
          content: [
            { type: "text", text: `Observation ${observation.n}. nonce: ${observation.nonce}` },
            { type: "image", data: png, mimeType: "image/png" },
          ],
          data: { observation: observation.n, nonce: observation.nonce, colour },
        };
      }
      case "record": {
        const nonce = job.arguments.nonce;
        if (observation === undefined || nonce !== observation.nonce) {
          const why =
            observation === undefined
              ? "nothing has been observed yet"
              : "it is not the nonce of the latest observation";
          // Like a real robot's failure, it shows the frame that explains it (the latest observation).
          return {
            ok: false,
            content: [
              { type: "text", text: `record refused: nonce ${JSON.stringify(nonce)} — ${why}` },
              ...(observation
                ? [{ type: "image" as const, data: observation.png, mimeType: "image/png" }]
                : []),
            ],
            data: { recorded: false },
          };
        }
        return {
          ok: true,
          content: [{ type: "text", text: `recorded nonce: ${observation.nonce}` }],
          data: { recorded: true, nonce: observation.nonce },
        };
      }
      case "finish": {
        const answer = typeof job.arguments.answer === "string" ? job.arguments.answer : "";
        const correct = observation !== undefined && answer.trim().toLowerCase() === observation.colour;
        const data = { submitted: true, correct, answer };
        return { ok: true, content: [{ type: "text", text: JSON.stringify(data) }], data };
      }
      default:
        return {
          ok: false,
          content: [{ type: "text", text: `the inert executor has no route ${JSON.stringify(job.route)}` }],
          data: { route: job.route },
        };
    }
  }

  async function submit(job: ExecutorJob): Promise<Acknowledgement> {
    const known = byCall.get(job.callId);
    if (known !== undefined) return { jobId: known };
    const seq = log.length + 1;
    const jobId = `inert_${String(seq).padStart(4, "0")}`;
    byCall.set(job.callId, jobId);
    const submittedAt = clock();
    const entry: InertJobLog = {
      seq,
      jobId,
      callId: job.callId,
      route: job.route,
      submitted_at: submittedAt,
      acknowledged_at: submittedAt,
    };
    log.push(entry);
    if (ackDelay > 0) await Bun.sleep(ackDelay);
    entry.acknowledged_at = clock();
    const stopped = Promise.withResolvers<StopReason>();
    running.set(jobId, stopped.resolve);
    receipts.set(
      jobId,
      (async () => {
        const outcome =
          receiptDelay > 0 ? await Promise.race([Bun.sleep(receiptDelay), stopped.promise]) : undefined;
        running.delete(jobId);
        const timing = {
          seq,
          submitted_at: entry.submitted_at,
          acknowledged_at: entry.acknowledged_at,
          completed_at: clock(),
        };
        if (typeof outcome === "string") {
          return {
            ok: false,
            content: [{ type: "text" as const, text: `stopped before it finished (${outcome})` }],
            data: { stopped: true, reason: outcome, timing },
          };
        }
        const receipt = run(job);
        return { ...receipt, data: { ...(receipt.data as Record<string, unknown>), timing } };
      })(),
    );
    return { jobId };
  }

  async function receipt(jobId: string): Promise<Receipt> {
    const pending = receipts.get(jobId);
    if (pending === undefined) throw new SidecarError("not_found", `the inert executor has no job ${jobId}`);
    return pending;
  }

  async function stop(job: StopJob, reason: StopReason): Promise<StopAnswer> {
    const end = running.get(job.jobId);
    if (end === undefined)
      return { status: 404, stopped: false, detail: `no job ${job.jobId} in flight (finished or unknown)` };
    end(reason);
    return { status: 200, stopped: true, detail: `job ${job.jobId} stopped` };
  }

  return { submit, receipt, stop, jobs: () => log, currentColour: () => observation?.colour };
}
