/**
 * One model exchange, the same for every ingress, as a list of named stages, each
 * a function with a typed input and output:
 *
 *   recordClientRequest   the client's request as received        (client_request)
 *   reserveTurn           one of the episode's max_turns, held     → Turn
 *   translate             client → hub (the ingress's toHub)       → Translation
 *   applyContext          the policy's one decision               (after_context) → ContextOutcome
 *   prepareUpstreamRequest  images as WebP, the body as sent      (upstream_request) → UpstreamRequest
 *   callUpstream          buffered, validated                      (upstream_response) → HubResponse
 *   prepareAnswer         rendered, calls registered, synced       → PreparedAnswer
 *   deliverAnswer         frames to the client, then delivered or revoked (delivered, status)
 *
 * Everything up to the prepared answer is one value (`answerExchange`), so delivery
 * is a stage of its own. A streaming exchange that takes a while opens the response
 * earlier, with keepalives, and its answer follows (keep-streaming-alive.ts). A stage that throws
 * fails the exchange (fail-exchange.ts): a `failed` status and an error in the
 * client's envelope.
 */

import { type WindowGuard, windowGuardFor } from "../context/window-guard.ts";
import { errorMessage } from "../lib/error-message.ts";
import { SidecarError } from "../lib/errors.ts";
import type { ChatTarget } from "../upstream/build-chat-request.ts";
import { callUpstream } from "./call-upstream.ts";
import { applyContext } from "./decide-context.ts";
import { deliverAnswer } from "./deliver-answer.ts";
import type { ExchangeSpec } from "./exchange-contract.ts";
import type { ExchangeDeps, ExchangeRun } from "./exchange-run.ts";
import { exchangeError, failExchange, redactError } from "./fail-exchange.ts";
import { keepStreamingAlive, streamForms } from "./keep-streaming-alive.ts";
import { type PreparedAnswer, prepareAnswer } from "./prepare-answer.ts";
import { imagesOf, prepareUpstreamRequest } from "./prepare-upstream-request.ts";
import { recordClientRequest } from "./record-client-request.ts";
import { reserveTurn, type Turn } from "./reserve-turn.ts";

export type { ExchangeDeps };

export async function runExchange(deps: ExchangeDeps, spec: ExchangeSpec): Promise<Response> {
  const { episode } = spec;
  const id = episode.nextExchangeId();
  const run: ExchangeRun = {
    deps,
    episode,
    id,
    log: deps.logger.child({ episode: episode.id, exchange: id, protocol: spec.protocol }),
  };
  // The request's long strings stay registered with their facts (known-texts.ts) until the
  // answer is ready, no longer than the request itself is held: delivery does not hold them.
  const hold = spec.clientRequest.received.hold;
  hold?.retain();
  if (hold) run.texts = hold;
  let held = hold !== undefined;
  const letGo = () => {
    if (!held) return;
    held = false;
    run.texts = undefined;
    hold?.release();
  };
  const stages = () => runStages(run, spec, letGo).finally(letGo);
  if (!spec.streaming || deps.keepAlive === undefined) return stages();
  const answer = stages();
  // The exchange outlives the response opened early: shutdown waits for it too.
  void episode.track(answer);
  return keepStreamingAlive({
    answer,
    form: streamForms[spec.protocol],
    timing: deps.keepAlive,
    renderError: (error) => spec.renderError(redactError(error, deps.redact)),
    toSidecarError: exchangeError,
    headSent: (state) => {
      run.keptAlive = state;
      run.clientSignal = spec.clientSignal;
    },
  });
}

async function runStages(run: ExchangeRun, spec: ExchangeSpec, answered: () => void): Promise<Response> {
  const { deps, episode } = run;
  let refused: SidecarError | undefined;
  try {
    refused = recordClientRequest(run, spec);
  } catch (error) {
    // No record, no exchange: nothing goes upstream for a request we could not record.
    run.log.error("cannot record the client request; exchange refused", { message: errorMessage(error) });
    return spec.renderError(redactError(exchangeError(error), deps.redact));
  }
  if (refused) {
    run.log.error("data directory over records.max_bytes; exchange refused", { message: refused.message });
    return failExchange(run, spec.renderError, undefined, refused);
  }
  let turn: Turn | undefined;
  try {
    turn = reserveTurn(episode);
    const answer = await answerExchange(run, spec);
    answered();
    return deliverAnswer({
      ...answer,
      episode,
      log: run.log,
      clientSignal: spec.clientSignal,
      turn,
      keepalives: () => run.keptAlive?.keepalives,
    });
  } catch (error) {
    return failExchange(run, spec.renderError, turn, error);
  }
}

/** The stages up to an answer ready to deliver: validated, its calls registered, its records durable. */
export async function answerExchange(run: ExchangeRun, spec: ExchangeSpec): Promise<PreparedAnswer> {
  const translation = spec.translate();
  const { target, window } = upstreamModel(run);
  const images = imagesOf(run);
  const context = await applyContext(run, translation.hub, {
    target,
    providerLimitBytes: run.deps.sizeLimits.max_request_bytes,
    images,
    window,
  });
  const request = await prepareUpstreamRequest(run, context, target, images);
  const response = await callUpstream(run, request, spec.clientSignal);
  // The answer's fdatasync starts now, while the answer is rendered and its calls registered.
  const durable = run.episode.records.sync({ now: true });
  durable.catch(() => {});
  return prepareAnswer(run, translation, response, durable);
}

/**
 * The upstream request's target: the episode's model and what it can take (docs/models.md);
 * and the guard of its window every context policy keeps the prompt under.
 */
export function upstreamModel(run: ExchangeRun): { target: ChatTarget; window: WindowGuard } {
  const { episode, deps } = run;
  const model = deps.models.resolve(episode.model);
  if (!model.ok) throw new SidecarError("invalid_request", model.problem, { param: "model" });
  const target: ChatTarget = {
    model: episode.model,
    imageInput: model.capabilities.image_input,
    parallelToolCalls: deps.parallelToolCalls,
    maxOutputTokens: model.capabilities.max_output_tokens,
    // Explicit markers where the model has them: a guaranteed hit at 10% (docs/prompt-cache.md).
    cacheMarkers: model.capabilities.cache === "explicit" || model.capabilities.cache === "both",
  };
  return { target, window: windowGuardFor(model.capabilities.max_input_tokens) };
}
