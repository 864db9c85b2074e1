/**
 * Writing an exchange's record lines through verbs named after its stages
 * (`records.clientRequest(…)`, `records.upstreamResponse(…)`, …), each taking the
 * stage's fields as typed by exchange-lines.ts and its body in the form it is
 * spliced in. The verbs are built over one typed write (`exchangeLine`), so the
 * records writer, a restart file and the observing wrapper share them. The
 * upstream_request verb keeps the episode's last upstream body as segments, so the
 * next body's line scans only what it does not repeat (growing-text-spans.ts).
 */
import type { JsonText } from "../lib/frozen-json.ts";
import type { SplicedMembers, SplitJson } from "./episode-records.ts";
import type {
  AfterContextFields,
  ClientRequestFields,
  DeliveredFields,
  ExchangeLine,
  StatusFields,
  UpstreamRequestFields,
  UpstreamResponseFields,
} from "./exchange-lines.ts";
import { createGrowingText, knownSpansOfGrowingText } from "./growing-text-spans.ts";

/**
 * The client's body: valid single-line JSON spliced in as `body` (split, so that its
 * images are never one text), any other text as the string `body_text`; none when omitted.
 */
export type ClientRequestBody = { json: SplitJson | string } | { text: string } | undefined;

/** Writes one exchange line: its fields, and members whose value is spliced in (episode-records.ts). */
export type WriteExchangeLine = (exchangeId: string, line: ExchangeLine, spliced?: SplicedMembers) => void;

export interface ExchangeRecordVerbs {
  clientRequest(exchangeId: string, fields: ClientRequestFields, body: ClientRequestBody): void;
  afterContext(exchangeId: string, fields: AfterContextFields): void;
  /** `body`: the Chat Completions JSON exactly as sent, with its known spans. */
  upstreamRequest(exchangeId: string, fields: UpstreamRequestFields, body: JsonText | string): void;
  upstreamResponse(exchangeId: string, fields: UpstreamResponseFields): void;
  /** `body`: the answer as delivered; a JSON answer is spliced in, any other (SSE) kept as a string. */
  delivered(exchangeId: string, fields: DeliveredFields, body: string): void;
  status(exchangeId: string, fields: StatusFields): void;
}

export function exchangeVerbs(write: WriteExchangeLine): ExchangeRecordVerbs {
  // The episode's last upstream body, as segments: the next one's line reuses the scan of
  // what it repeats (growing-text-spans.ts). A body with images is not kept: its base64 is
  // never held twice.
  const lastUpstreamBody = createGrowingText();
  return {
    clientRequest(exchangeId, fields, body) {
      const spliced: SplicedMembers =
        body === undefined
          ? {}
          : "json" in body
            ? { json: { body: body.json } }
            : { text: { body_text: body.text } };
      write(exchangeId, { stage: "client_request", ...fields }, spliced);
    },
    afterContext: (exchangeId, fields) => write(exchangeId, { stage: "after_context", ...fields }),
    upstreamRequest: (exchangeId, fields, body) =>
      write(
        exchangeId,
        { stage: "upstream_request", ...fields },
        {
          json: {
            body:
              typeof body === "string"
                ? body
                : knownSpansOfGrowingText(lastUpstreamBody, body, !body.text.includes(";base64,")),
          },
        },
      ),
    upstreamResponse: (exchangeId, fields) => write(exchangeId, { stage: "upstream_response", ...fields }),
    delivered(exchangeId, fields, body) {
      const json = fields.content_type.startsWith("application/json");
      write(exchangeId, { stage: "delivered", ...fields }, json ? { json: { body } } : { text: { body } });
    },
    status: (exchangeId, fields) => write(exchangeId, { stage: "status", ...fields }),
  };
}
