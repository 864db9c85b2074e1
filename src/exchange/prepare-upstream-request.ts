/**
 * The body stage of an exchange: the upstream body built (build-upstream-body.ts),
 * held to the provider's limits, and recorded as sent in the `upstream_request` line
 * with the conversion's figures and what the ingress accepted but does not forward.
 */
import type { HubRequest } from "../hub/schema.ts";
import { createImageConverter, type ImageConverter } from "../images/convert-request.ts";
import { checkImageSizes, checkUpstreamSize } from "../images/size-guard.ts";
import type { ChatTarget } from "../upstream/build-chat-request.ts";
import type { ChatRequest } from "../upstream/chat-schema.ts";
import { buildUpstreamBody } from "./build-upstream-body.ts";
import type { ContextOutcome } from "./decide-context.ts";
import type { ExchangeRun } from "./exchange-run.ts";

/** What goes upstream: the Chat Completions request and its JSON exactly as sent. */
export type UpstreamRequest = { chat: ChatRequest; body: string };

/** Images converted for this episode (its cache entries are released when it ends). */
export function imagesOf(run: ExchangeRun): ImageConverter {
  const { deps } = run;
  return createImageConverter({
    ...deps.images,
    maxPixels: deps.sizeLimits.max_image_pixels,
    owner: run.episode.id,
    ...(run.texts ? { texts: run.texts } : {}),
  });
}

export async function prepareUpstreamRequest(
  run: ExchangeRun,
  context: ContextOutcome,
  target: ChatTarget,
  images: ImageConverter,
): Promise<UpstreamRequest> {
  const { sizeLimits } = run.deps;
  const upstream = await buildUpstreamBody(context, { target, images, memos: run.episode.memos });
  checkImageSizes(upstream.request, sizeLimits);
  checkUpstreamSize(upstream.body, sizeLimits);
  // The body as sent, spliced in: stringifying it again doubled the cost of large (image) requests.
  run.episode.records.upstreamRequest(
    run.id,
    {
      images: upstream.stats,
      ignored: ignoredUpstream(context.translated, upstream.chat, run.episode.model),
    },
    { text: upstream.body, known: upstream.known },
  );
  return { chat: upstream.chat, body: upstream.body };
}

/** What the ingress accepted but does not forward, and a max_output_tokens the model's limit lowered. */
function ignoredUpstream(translated: HubRequest, chat: ChatRequest, model: string): string[] {
  const asked = translated.maxOutputTokens;
  if (asked === undefined || chat.max_tokens === asked) return translated.ignored;
  return [
    ...translated.ignored,
    `max_output_tokens ${asked} lowered to ${chat.max_tokens} (max_output_tokens of model ${model}: docs/models.md)`,
  ];
}
