/**
 * What every client protocol's route group does alike, given the protocol's parts (its
 * name, its error envelope, the members its client resends each turn): the group's app,
 * answering any error in that envelope; the request body, parsed with the resent members
 * shared across the episode's requests; one model exchange handed to the pipeline with
 * what every request gives alike (its recorded path, the client's session id and signal,
 * whether it asked for a stream); the episode's model as the protocol's list and model
 * objects; and the local final refusal of an endpoint the sidecar does not offer. A
 * route module adds only what is its protocol's own.
 */
import { type Context, Hono } from "hono";
import type { BodyEnv } from "../body/body-variables.ts";
import { type JsonBody, parseJsonBody, repeatedMembersPer } from "../body/parse-json-body.ts";
import { receivedBody } from "../body/received-body.ts";
import type { Episode } from "../episodes/episode.ts";
import type { Protocol, Translation } from "../exchange/exchange-contract.ts";
import { asksForStream } from "../exchange/keep-streaming-alive.ts";
import { runExchange } from "../exchange/run-exchange.ts";
import { type SidecarError, toSidecarError } from "../lib/errors.ts";
import { answerAuxiliary } from "./answer-auxiliary.ts";
import { authenticateRequest } from "./authenticate-ingress.ts";
import { requestedModel, type ServedModel, servedModel } from "./episode-model.ts";
import type { IngressRouteDeps } from "./ingress-route-deps.ts";
import { recordedPath } from "./recorded-path.ts";

/** The parts of a client protocol its routes are built from. */
export type ProtocolParts = {
  protocol: Protocol;
  /** The protocol's error envelope. */
  renderError: (error: SidecarError) => Response;
  /**
   * The members its client resends unchanged every turn, and the member holding the
   * growing history (parse-json-body.ts): shared per episode. None: every body is parsed afresh.
   */
  repeated?: { members: readonly string[]; history: string };
};

export interface ProtocolRoutes {
  /** The route group; any error a route throws is answered in the protocol's envelope. */
  readonly app: Hono<BodyEnv>;
  /** The request's JSON body, its resent members shared with the episode's earlier requests. */
  body(c: Context<BodyEnv>, episode: Episode): Promise<JsonBody>;
  /**
   * One model exchange for the request, tracked by the episode. `streaming`: whether the
   * client asked for a stream, when its body does not say so in `stream: true`.
   */
  exchange(
    c: Context<BodyEnv>,
    episode: Episode,
    body: JsonBody,
    translate: () => Translation,
    streaming?: boolean,
  ): Promise<Response>;
  /** GET `path` and `path/:id`: the episode's model as the protocol's list and model objects. */
  models(path: string, list: (models: ServedModel[]) => object, one: (model: ServedModel) => object): void;
  /** POST `path`: answered at once with the error `refusal` makes, an auxiliary response (no exchange, no turn). */
  refuse(path: string, operation: string, refusal: () => SidecarError): void;
}

export function createProtocolRoutes(deps: IngressRouteDeps, parts: ProtocolParts): ProtocolRoutes {
  const { protocol, renderError } = parts;
  const app = new Hono<BodyEnv>();
  app.onError((error) => renderError(toSidecarError(error)));
  const repeatedOf = parts.repeated
    ? repeatedMembersPer<Episode>(parts.repeated.members, parts.repeated.history)
    : () => undefined;
  return {
    app,
    body: async (c, episode) => parseJsonBody(await receivedBody(c), repeatedOf(episode)),
    exchange: (c, episode, body, translate, streaming) =>
      episode.track(
        runExchange(deps.exchange, {
          protocol,
          episode,
          path: recordedPath(new URL(c.req.url)),
          clientRequest: body,
          clientSession: episode.clientSessionOf(c.req.raw.headers),
          translate,
          renderError,
          clientSignal: c.req.raw.signal,
          streaming: streaming ?? asksForStream(body),
        }),
      ),
    models(path, list, one) {
      app.get(path, (c) => {
        const episode = authenticateRequest(deps.episodes, c, { modelRequest: false });
        return c.json(list([servedModel(episode, deps.exchange.models)]));
      });
      app.get(`${path}/:id`, (c) => {
        const episode = authenticateRequest(deps.episodes, c, { modelRequest: false });
        return c.json(one(requestedModel(episode, deps.exchange.models, c.req.param("id"))));
      });
    },
    refuse(path, operation, refusal) {
      app.post(path, async (c) => {
        const episode = authenticateRequest(deps.episodes, c);
        await receivedBody(c);
        const error = refusal();
        const entry = { protocol, operation, path: recordedPath(new URL(c.req.url)), message: error.message };
        return answerAuxiliary(deps.logger, episode, entry, error, renderError);
      });
    },
  };
}
