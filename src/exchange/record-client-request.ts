/**
 * The first stage of every exchange: its `client_request` line, the client's
 * request exactly as received (docs/records.md). Nothing goes upstream for a
 * request that could not be recorded: a write that fails throws, and the exchange
 * is refused without a turn. Over the data directory's bound (records.max_bytes)
 * the line is written without the body and the bound's error is returned: the
 * exchange is then refused, on the record.
 */

import { wholeText } from "../body/split-text.ts";
import { type SidecarError, toSidecarError } from "../lib/errors.ts";
import type { ExchangeSpec } from "./exchange-contract.ts";
import type { ExchangeRun } from "./exchange-run.ts";

export function recordClientRequest(run: ExchangeRun, spec: ExchangeSpec): SidecarError | undefined {
  let overBudget: SidecarError | undefined;
  try {
    run.deps.recordsBudget?.checkNewExchange();
  } catch (error) {
    overBudget = toSidecarError(error);
  }
  const received = spec.clientRequest;
  // Kept byte for byte: valid single-line JSON spliced in as `body` (not serialised
  // again: with image histories it is megabytes, and it stays split so that it is never
  // one text), any other text as the string `body_text`. Taken-out strings are base64: no newline.
  // (includes: a regular expression took ~4× as long over a large body)
  const { reduced } = received.received;
  const verbatim = received.parsed && !reduced.includes("\n") && !reduced.includes("\r");
  run.episode.records.clientRequest(
    run.id,
    {
      protocol: spec.protocol,
      path: spec.path,
      ...(overBudget ? { body_omitted: "records.max_bytes" as const } : {}),
      ...(spec.clientSession !== undefined ? { client_session: spec.clientSession } : {}),
    },
    overBudget
      ? undefined
      : verbatim
        ? { json: { split: received.received, known: (received.parsed && received.known) || [] } }
        : { text: wholeText(received.received) },
  );
  return overBudget;
}
