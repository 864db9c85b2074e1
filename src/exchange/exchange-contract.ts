/**
 * The contract between an ingress spoke and the exchange pipeline (run-exchange.ts):
 * what a spoke hands over for one model exchange (ExchangeSpec: the client's request,
 * how to translate it, how to render an error) and what its translation gives back
 * (the hub request, and how to render the validated answer). A spoke depends on this
 * module, never on the pipeline's stages.
 */

import type { JsonBody } from "../body/parse-json-body.ts";
import type { Episode } from "../episodes/episode.ts";
import type { Protocol } from "../hub/protocol.ts";
import type { HubRequest, HubResponse } from "../hub/schema.ts";
import type { SidecarError } from "../lib/errors.ts";

export type { Protocol };

/** A rendered answer: whole frames (SSE) or one JSON document, each written in one piece. */
export type Rendered = { contentType: string; chunks: string[] };

/** How a delivery ended: every byte handed to the server for the socket, or not. */
export type DeliveryOutcome = "delivered" | "revoked";

/** A client request translated (an ingress's `toHub`): the hub request, and how to render the answer to it. */
export type Translation = {
  hub: HubRequest;
  render: (response: HubResponse) => Rendered;
  /** Told once whether the rendered answer was fully delivered or revoked — also when it failed before delivery (e.g. to store it). */
  settled?: (outcome: DeliveryOutcome) => void;
};

export type ExchangeSpec = {
  protocol: Protocol;
  episode: Episode;
  /** The request path from /e/<episode> on, as recorded (recorded-path.ts). */
  path: string;
  /** The client's request exactly as received. */
  clientRequest: JsonBody;
  /** The client's own session id on it, when it sent one (recorded with the request). */
  clientSession?: string | undefined;
  /** Client → hub; throws SidecarError naming the field (or refusing the request). */
  translate: () => Translation;
  renderError: (error: SidecarError) => Response;
  /** The client's request signal: a client that leaves cancels the upstream work. */
  clientSignal: AbortSignal;
  /** The client asked for a stream: it can be kept waiting with keepalives (keep-streaming-alive.ts). */
  streaming?: boolean;
};
