/**
 * Why and where an upstream exchange was cancelled before it had an answer, as the
 * `upstream_response` line's `cancelled` member holds it (docs/records.md): the one
 * source of the member's schema, of the error message the client is told, and of the
 * reading every reader shares (validate, the `/ui` timeline, traces). A line written
 * before the member existed (2026-12-05) said so only in its `error` message and its
 * last attempt's `ended`; `recordedCancel` reads those lines the same way.
 */
import { z } from "zod";
import { type CancelledAt, cancelledAtSchema } from "../upstream/upstream-attempt.ts";

/** Who ended the exchange. */
export const cancelReasonSchema = z.enum(["client_closed", "episode_cancelled", "shutdown"]);
export type CancelReason = z.infer<typeof cancelReasonSchema>;

export const upstreamCancelSchema = z.object({ at: cancelledAtSchema, reason: cancelReasonSchema });
export type UpstreamCancel = z.infer<typeof upstreamCancelSchema>;

const reasonText: Record<CancelReason, string> = {
  client_closed: "the client closed the request",
  episode_cancelled: "the episode was cancelled",
  shutdown: "the sidecar is shutting down",
};

const messagePrefix = "upstream request cancelled: ";

/** The error the client is told and the line's `error` holds. */
export const cancelMessage = (reason: CancelReason): string => `${messagePrefix}${reasonText[reason]}`;

/** A recorded cancellation as read back: an older line may not name its reason. */
export type RecordedCancel = { at: CancelledAt; reason: CancelReason | undefined };

const atText: Record<CancelledAt, string> = {
  attempt: "during an upstream attempt",
  backoff: "while waiting to retry",
  queue: "while waiting in the upstream queue for a retry",
};

/** For a person: "cancelled while waiting to retry: the client closed the request". */
export const describeCancel = (cancel: RecordedCancel): string =>
  `cancelled ${atText[cancel.at]}${cancel.reason ? `: ${reasonText[cancel.reason]}` : ""}`;

/** The members of an upstream_response line, as read back, that tell a cancellation. */
type RecordedResponse = {
  cancelled?: Partial<UpstreamCancel> | undefined;
  error?: string | undefined;
  attempts?: readonly { ended?: string | undefined }[] | undefined;
};

/**
 * The cancellation an upstream_response line records; undefined for an exchange that was
 * not cancelled. A line of before 2026-12-05 is read from its message: its `at` is `attempt`
 * when the last attempt ended cancelled, else `backoff` (those lines did not tell the queue
 * before a retry from the backoff), and its reason is the one its message names.
 */
export function recordedCancel(line: RecordedResponse | undefined): RecordedCancel | undefined {
  if (!line) return undefined;
  const at = cancelledAtSchema.safeParse(line.cancelled?.at);
  if (at.success) {
    const reason = cancelReasonSchema.safeParse(line.cancelled?.reason);
    return { at: at.data, reason: reason.success ? reason.data : undefined };
  }
  const lastCancelled = line.attempts?.at(-1)?.ended === "cancelled";
  const message = line.error ?? "";
  if (!lastCancelled && !message.startsWith(messagePrefix)) return undefined;
  const said = message.slice(messagePrefix.length);
  const reason = cancelReasonSchema.options.find((r) => reasonText[r] === said);
  return { at: lastCancelled ? "attempt" : "backoff", reason };
}
