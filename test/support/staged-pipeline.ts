/**
 * The exchange pipeline with a stage added or the context stage replaced (tests only):
 * how the "add a pipeline stage" and "add a context policy" walkthroughs of
 * docs/architecture.md are driven through a whole exchange without editing
 * src/exchange/run-exchange.ts or the closed policy union. It is runExchange's sequence
 * (recordClientRequest, reserveTurn, then answerExchange's stages, deliverAnswer, and
 * failExchange for a stage that throws) written out once more from the same exported
 * stage functions, with two places to change: a stage on the hub request before the
 * context stage, and the context stage itself. Its route group takes Anthropic Messages
 * requests (the shipped spoke's toHub and envelope) at `POST /<name>/v1/messages`; a test
 * proves it runs as the shipped route does when nothing is changed. No keepalive path:
 * the requests it takes are not streamed.
 */
import type { Hono } from "hono";
import type { BodyEnv } from "../../src/body/body-variables.ts";
import type { ContextResult } from "../../src/context/apply-context.ts";
import type { ContextCut } from "../../src/context/context-cut.ts";
import type { WindowGuard } from "../../src/context/window-guard.ts";
import { callUpstream } from "../../src/exchange/call-upstream.ts";
import { afterContextFields, applyContext, type ContextOutcome } from "../../src/exchange/decide-context.ts";
import { deliverAnswer } from "../../src/exchange/deliver-answer.ts";
import type { ExchangeSpec } from "../../src/exchange/exchange-contract.ts";
import type { ExchangeDeps, ExchangeRun } from "../../src/exchange/exchange-run.ts";
import { exchangeError, failExchange, redactError } from "../../src/exchange/fail-exchange.ts";
import { prepareAnswer } from "../../src/exchange/prepare-answer.ts";
import { imagesOf, prepareUpstreamRequest } from "../../src/exchange/prepare-upstream-request.ts";
import { recordClientRequest } from "../../src/exchange/record-client-request.ts";
import { reserveTurn, type Turn } from "../../src/exchange/reserve-turn.ts";
import { upstreamModel } from "../../src/exchange/run-exchange.ts";
import type { HubRequest } from "../../src/hub/schema.ts";
import { authenticateRequest } from "../../src/ingress/authenticate-ingress.ts";
import type { IngressRouteDeps } from "../../src/ingress/ingress-route-deps.ts";
import { renderError } from "../../src/ingress/messages/errors.ts";
import { toHub } from "../../src/ingress/messages/to-hub.ts";
import { createProtocolRoutes } from "../../src/ingress/protocol-routes.ts";
import { recordedPath } from "../../src/ingress/recorded-path.ts";
import type { FrozenMemos } from "../../src/lib/frozen-memos.ts";
import type { EpisodeRouteGroup } from "../../src/server/app.ts";

/** A stage on the translated hub request, before the context stage: `(run, input) => output`. */
export type HubStage = (run: ExchangeRun, hub: HubRequest) => HubRequest;

/** What the shipped context stage is given besides the request (answerExchange builds it). */
export type ContextStageOptions = Parameters<typeof applyContext>[2];

/** The context stage: decides what goes upstream and records the decision (`after_context`). */
export type ContextStage = (
  run: ExchangeRun,
  translated: HubRequest,
  options: ContextStageOptions,
) => Promise<ContextOutcome>;

export type PipelineChanges = {
  /** Runs between the spoke's translation and the context stage. */
  beforeContext?: HubStage;
  /** Replaces applyContext (decide-context.ts). */
  context?: ContextStage;
};

/** The pipeline of runExchange with `changes`, for one exchange. */
export async function runChangedExchange(
  deps: ExchangeDeps,
  spec: ExchangeSpec,
  changes: PipelineChanges,
): Promise<Response> {
  const { episode } = spec;
  const id = episode.nextExchangeId();
  const run: ExchangeRun = {
    deps,
    episode,
    id,
    log: deps.logger.child({ episode: episode.id, exchange: id, protocol: spec.protocol }),
  };
  let refused: ReturnType<typeof recordClientRequest>;
  try {
    refused = recordClientRequest(run, spec);
  } catch (error) {
    return spec.renderError(redactError(exchangeError(error), deps.redact));
  }
  if (refused) return failExchange(run, spec.renderError, undefined, refused);
  let turn: Turn | undefined;
  try {
    turn = reserveTurn(episode);
    const translation = spec.translate();
    const hub = changes.beforeContext ? changes.beforeContext(run, translation.hub) : translation.hub;
    const { target, window } = upstreamModel(run);
    const images = imagesOf(run);
    const options = { target, providerLimitBytes: deps.sizeLimits.max_request_bytes, images, window };
    const context = await (changes.context ?? applyContext)(run, hub, options);
    const request = await prepareUpstreamRequest(run, context, target, images);
    const response = await callUpstream(run, request, spec.clientSignal);
    const durable = episode.records.sync({ now: true });
    durable.catch(() => {});
    const answer = await prepareAnswer(run, translation, response, durable);
    return deliverAnswer({ ...answer, episode, log: run.log, clientSignal: spec.clientSignal, turn });
  } catch (error) {
    return failExchange(run, spec.renderError, turn, error);
  }
}

/** A context policy's function, as applyContextPolicy calls one (src/context/apply-context.ts). */
export type PolicyFunction = (
  request: HubRequest,
  previous?: ContextCut,
  window?: WindowGuard,
  memos?: FrozenMemos,
) => ContextResult;

/**
 * A context stage built as applyContext is, for a policy the episode cannot name (the
 * policy union is closed): the episode's previous reduction and memos in, its reduction
 * remembered, its decision the one recorded (`after_context`).
 */
export function contextStageOf(apply: PolicyFunction): ContextStage {
  return async (run, translated, options) => {
    const { cut, ...decided } = apply(
      translated,
      run.episode.contextMemory.previous,
      options.window,
      run.episode.memos,
    );
    if (cut) run.episode.contextMemory.previous = cut;
    const outcome: ContextOutcome = { ...decided, translated };
    run.episode.records.afterContext(run.id, afterContextFields(outcome));
    return outcome;
  };
}

/** A route group at `/<name>/*`: Anthropic Messages requests at `POST /<name>/v1/messages`, run with `changes`. */
export function changedPipelineGroup(name: string, changes: PipelineChanges): EpisodeRouteGroup {
  return {
    paths: `/${name}/*`,
    body: "split",
    routes: (deps: IngressRouteDeps): Hono<BodyEnv> => {
      const routes = createProtocolRoutes(deps, { protocol: "messages", renderError });
      routes.app.post(`/${name}/v1/messages`, async (c) => {
        const episode = authenticateRequest(deps.episodes, c);
        const body = await routes.body(c, episode);
        const spec: ExchangeSpec = {
          protocol: "messages",
          episode,
          path: recordedPath(new URL(c.req.url)),
          clientRequest: body,
          clientSession: episode.clientSessionOf(c.req.raw.headers),
          translate: () => toHub(body),
          renderError,
          clientSignal: c.req.raw.signal,
        };
        return episode.track(runChangedExchange(deps.exchange, spec, changes));
      });
      return routes.app;
    },
  };
}
