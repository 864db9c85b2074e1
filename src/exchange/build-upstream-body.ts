/**
 * The upstream body of an exchange: the hub request as the context stage decided
 * it (decide-context.ts), its PNGs as WebP, rendered once. The episode lets go of
 * the cached WebP of the frames a reducing policy left out for good. Under
 * body_budget the images are already prepared (some converted, to size them) and
 * the body's size is checked against the budget once more: the size model the
 * decision used is exact, and a body over the budget never goes out even if it
 * were not.
 */
import type { HubRequest } from "../hub/schema.ts";
import type { ImageConverter, ImageStats } from "../images/convert-request.ts";
import { type KnownSpan, stringifyKnowingMembers } from "../lib/frozen-json.ts";
import type { FrozenMemos } from "../lib/frozen-memos.ts";
import { buildChatRequest, type ChatTarget } from "../upstream/build-chat-request.ts";
import type { ChatRequest } from "../upstream/chat-schema.ts";
import { type ContextOutcome, markerRoom } from "./decide-context.ts";

export type UpstreamBody = {
  /** The hub request the body was built from (after the policy, images converted). */
  request: HubRequest;
  chat: ChatRequest;
  /** JSON.stringify(chat): the bytes sent. */
  body: string;
  /** Where `body` holds the JSON of a frozen member (a repeated tool list), for the records. */
  known: readonly KnownSpan[];
  /** What the image conversion did. */
  stats: ImageStats;
};

export async function buildUpstreamBody(
  context: Pick<ContextOutcome, "request" | "decision" | "stale" | "prepared">,
  options: { target: ChatTarget; images: ImageConverter; memos?: FrozenMemos },
): Promise<UpstreamBody> {
  const images = context.prepared ?? options.images.prepare(context.request);
  // What the policy has dropped for good is not kept in the image cache for this episode.
  const { request, stats } = await images.finish(context.request, { forget: context.stale });
  const chat = buildChatRequest(request, options.target, options.memos);
  // The same text as JSON.stringify(chat); a repeated tool list's JSON is reused.
  const { text: body, known } = stringifyKnowingMembers(chat, options.memos);
  const budget = context.decision.body_budget;
  if (budget) {
    const sent = Buffer.byteLength(body, "utf8");
    // The budget was measured without the cache markers, which are added last (decide-context.ts).
    if (sent > budget.max_body_bytes + markerRoom(options.target)) {
      throw new Error(
        `body_budget: the body built is ${sent} bytes, over max_body_bytes ${budget.max_body_bytes}, though measured at ${budget.bytes_after}`,
      );
    }
  }
  return { request, chat, body, known, stats };
}
