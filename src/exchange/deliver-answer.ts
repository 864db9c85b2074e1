/**
 * The delivery stage of an exchange: streams the rendered frames of a prepared
 * answer (prepare-answer.ts) and settles it once. Delivery is confirmed only once
 * the last frame was taken by the server for writing (docs/design.md); a client
 * that goes away first, a cancelled stream or a shutdown revokes it, and the
 * answer's batch with it. Either way the outcome is recorded (`delivered` and
 * `status` lines) and the exchange's turn given back.
 *
 * Takes only what delivery needs, never the exchange spec: the server keeps the
 * answer stream's source (these closures) alive for a while after the last byte,
 * and through the spec they kept the whole received request (a camera history's ~80
 * MB at turn 100) from the collection that runs after the answer
 * (docs/decisions/0008-long-episode-memory.md).
 */
import type { Episode } from "../episodes/episode.ts";
import { errorMessage } from "../lib/error-message.ts";
import type { Logger } from "../lib/logger.ts";
import type { DeliveryOutcome } from "./exchange-contract.ts";
import type { PreparedAnswer } from "./prepare-answer.ts";
import type { Turn } from "./reserve-turn.ts";

export type Delivery = PreparedAnswer & {
  episode: Episode;
  log: Logger;
  /** The client's request signal: a client gone before the last frame revokes the delivery. */
  clientSignal: AbortSignal;
  turn: Turn;
  /** Keepalives sent before the answer (keep-streaming-alive.ts), read when it is delivered. */
  keepalives?: () => number | undefined;
};

const encoder = new TextEncoder();
const closedByClient = "client closed the connection";

export function deliverAnswer(delivery: Delivery): Response {
  const { episode, exchangeId, rendered, batchId, log, clientSignal, turn } = delivery;
  let onSettled = delivery.settled;
  let next = 0;
  let settled = false;
  // Shutdown waits for this delivery to settle, and revokes it if it never does (drain-episodes.ts).
  const { promise: settledPromise, resolve: resolveSettled } = Promise.withResolvers<void>();
  const revokeOnShutdown = (reason: string) => settle("revoked", reason);
  const closeDelivery = episode.deliveryOpened(revokeOnShutdown);
  void episode.track(settledPromise);
  const settle = (outcome: DeliveryOutcome, reason?: string) => {
    if (settled) return;
    settled = true;
    closeDelivery();
    clientSignal.removeEventListener("abort", onClientAbort);
    resolveSettled();
    let recorded = true;
    try {
      settleRecords(outcome, reason);
    } catch (error) {
      // Never thrown into the response stream: the failure is logged and in the episode's status.
      recorded = false;
      log.error("cannot record the delivery outcome", { outcome, message: errorMessage(error) });
    }
    // A delivery whose record failed is not built upon (e.g. not continued as a stored response).
    const settledHook = onSettled;
    onSettled = undefined;
    settledHook?.(recorded ? outcome : "revoked");
  };
  const settleRecords = (outcome: DeliveryOutcome, reason?: string) => {
    if (outcome === "delivered") {
      turn.delivered(batchId);
      const keepalives = delivery.keepalives?.();
      episode.records.delivered(
        exchangeId,
        { content_type: rendered.contentType, ...(keepalives === undefined ? {} : { keepalives }) },
        rendered.chunks.join(""),
      );
      episode.records.status(exchangeId, { status: "delivered", batch: batchId ?? null });
    } else {
      turn.revoked(batchId);
      episode.records.status(exchangeId, {
        status: "revoked",
        reason: reason ?? "client went away",
        frames_sent: next,
        batch: batchId ?? null,
      });
      log.warn("delivery failed; calls revoked", { reason, batch: batchId });
    }
  };
  // Removed once settled: the request's signal can outlive the exchange.
  const onClientAbort = () => settle("revoked", closedByClient);
  // A client that left while the answer was being prepared (upstream done, records synced) gets nothing.
  if (clientSignal.aborted) settle("revoked", closedByClient);
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const chunk = rendered.chunks[next];
      if (chunk === undefined) {
        controller.close();
        // "Delivered" = the last byte was handed to the server for the socket (docs/design.md);
        // a peer close noticed by then is a failed delivery.
        settle(clientSignal.aborted ? "revoked" : "delivered", closedByClient);
        return;
      }
      next += 1;
      controller.enqueue(encoder.encode(chunk));
    },
    cancel(reason) {
      settle("revoked", reason instanceof Error ? reason.message : String(reason ?? "client went away"));
    },
  });
  clientSignal.addEventListener("abort", onClientAbort, { once: true });
  return new Response(stream, {
    status: 200,
    headers: { "content-type": rendered.contentType, "cache-control": "no-cache" },
  });
}
