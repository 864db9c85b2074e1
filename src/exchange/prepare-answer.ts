/**
 * The answer stage of an exchange: the validated answer rendered for the client
 * (secrets removed), its robot tool calls registered in the ledger as one batch
 * named by the exchange, and everything recorded so far made durable, so that what
 * the model answered (and the calls registered) survives a power cut before any byte
 * is delivered. Its value is all delivery needs (deliver-answer.ts), and nothing
 * else: not the request, which a camera history makes tens of MB.
 * On failure the batch is revoked and the translation told the answer was revoked.
 */
import type { HubResponse } from "../hub/schema.ts";
import { errorMessage } from "../lib/error-message.ts";
import type { Rendered, Translation } from "./exchange-contract.ts";
import type { ExchangeRun } from "./exchange-run.ts";

export type PreparedAnswer = {
  exchangeId: string;
  rendered: Rendered;
  /** The ledger batch of the answer's robot calls; none when it has none. */
  batchId: string | undefined;
  /** The translation's hook, told once how delivery ended. */
  settled: Translation["settled"];
};

/**
 * `durable`: the fdatasync of the answer's line, started as soon as it was recorded
 * (it runs while the answer is rendered and its calls registered).
 */
export async function prepareAnswer(
  run: ExchangeRun,
  translation: Pick<Translation, "render" | "settled">,
  response: HubResponse,
  durable: Promise<void>,
): Promise<PreparedAnswer> {
  let batchId: string | undefined;
  try {
    const raw = translation.render(response);
    const rendered = { ...raw, chunks: raw.chunks.map(run.deps.redact) };
    batchId = registerCalls(run, response);
    try {
      await Promise.all([durable, run.episode.records.sync()]);
    } catch (error) {
      if (batchId) revokeQuietly(run, batchId, "its records could not be made durable");
      throw error;
    }
    return { exchangeId: run.id, rendered, batchId, settled: translation.settled };
  } catch (error) {
    translation.settled?.("revoked");
    throw error;
  }
}

/** The answer's calls of robot tools, registered as one batch named by the exchange. */
function registerCalls(run: ExchangeRun, response: HubResponse): string | undefined {
  const { episode } = run;
  episode.rememberArguments(response.toolCalls);
  const calls = response.toolCalls.flatMap((call) => {
    const tool = episode.toolFor(call.name);
    return tool
      ? [
          {
            id: call.id,
            modelName: call.name,
            tool,
            args: JSON.parse(call.arguments) as Record<string, unknown>,
          },
        ]
      : [];
  });
  if (calls.length === 0) return undefined;
  episode.ledger.register({ batchId: run.id, calls });
  return run.id;
}

function revokeQuietly(run: ExchangeRun, batchId: string, reason: string): void {
  try {
    run.episode.ledger.revoke(batchId, reason);
  } catch (error) {
    run.log.error("cannot revoke the batch", { batch: batchId, message: errorMessage(error) });
  }
}
