/**
 * Where the model left the smoke script, in plain sentences, from the episode's
 * records only (the ledger's delivered batches and receipts, the recorded
 * upstream answers). A real model may not follow the script; `validate` then
 * fails and these sentences say how, next to the checks' evidence.
 *   script: observe → record(nonce) ×2 in one batch → finish(colour seen) → text
 */
import type { LedgerLine } from "./smoke-checks.ts";
import type { UpstreamExchange } from "./upstream-evidence.ts";

type Receipt = { ok?: boolean; data?: Record<string, unknown> } | undefined;

const script: { tools: string[]; says: string }[] = [
  { tools: ["observe"], says: "one observe call" },
  { tools: ["record", "record"], says: "two identical record calls with the observed nonce, in one batch" },
  { tools: ["finish"], says: "one finish call with the colour seen" },
];

function argument(args: unknown, key: string): unknown {
  const value = typeof args === "string" ? safeJson(args) : args;
  return (value as Record<string, unknown> | null)?.[key];
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The deviations, from the episode's ledger lines (in order) and its recorded upstream exchanges. */
export function modelDeviations(ledger: LedgerLine[], upstream: UpstreamExchange[]): string[] {
  const batches = ledger.filter((e) => e.type === "registered").map((e) => e.calls ?? []);
  const receiptOf = new Map(
    ledger.filter((e) => e.type === "receipt").map((e) => [e.callId, e.result as Receipt]),
  );
  const out: string[] = [];

  for (const [i, batch] of batches.entries()) {
    const step = script[i];
    const called = batch.map((c) => c.tool);
    if (!step) {
      out.push(
        `model turn ${i + 1} called ${JSON.stringify(called)} after the script was done (it asks for a final text)`,
      );
      continue;
    }
    if (JSON.stringify(called) !== JSON.stringify(step.tools))
      out.push(`model turn ${i + 1} called ${JSON.stringify(called)}; the script asks for ${step.says}`);
  }
  if (batches.length < script.length)
    out.push(
      `the model delivered ${batches.length} tool-call turn(s); the script has ${script.length} (next expected: ${script[batches.length]?.says})`,
    );

  const observedNonce = batches
    .flat()
    .filter((c) => c.tool === "observe")
    .map((c) => receiptOf.get(c.id)?.data?.nonce)
    .findLast((n) => typeof n === "string");
  for (const call of batches.flat().filter((c) => c.tool === "record")) {
    const nonce = argument(call.args, "nonce");
    if (observedNonce !== undefined && nonce !== observedNonce)
      out.push(
        `record ${call.id} sent nonce ${JSON.stringify(nonce)}; the observation's nonce was ${JSON.stringify(observedNonce)}`,
      );
  }
  for (const call of batches.flat().filter((c) => c.tool === "finish")) {
    const data = receiptOf.get(call.id)?.data;
    if (data && data.correct !== true)
      out.push(
        `finish ${call.id} answered ${JSON.stringify(argument(call.args, "answer"))}, which the receipt says is not the colour of the observed frame`,
      );
  }

  for (const r of upstream) {
    const failed = (r.response as { error?: unknown } | null)?.error;
    if (failed !== undefined)
      out.push(`the upstream answer of exchange ${r.exchange} was refused: ${String(failed)}`);
  }
  const last = upstream.at(-1)?.response as
    | { toolCalls?: unknown[]; text?: string | null }
    | null
    | undefined;
  if (batches.length >= script.length && !(last && last.toolCalls?.length === 0 && last.text))
    out.push("the model did not end with a text answer after finish");
  return out;
}
