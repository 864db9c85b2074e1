/**
 * A model request refused before its route runs (a body over the limit, a body
 * that did not arrive in time, too many requests in flight): the refusal is
 * rendered in the client's own protocol envelope, and when the episode is known
 * and the request carries its key, it is written to the episode's auxiliary
 * records (no exchange, no turn). Other paths (control, MCP) get `undefined` and
 * keep their own envelope.
 */

import type { Protocol } from "../hub/protocol.ts";
import { credentialMatches } from "../lib/credentials.ts";
import type { SidecarError } from "../lib/errors.ts";
import { answerAuxiliary } from "./answer-auxiliary.ts";
import { presentedKey } from "./authenticate-ingress.ts";
import * as gemini from "./gemini/errors.ts";
import type { IngressRouteDeps } from "./ingress-route-deps.ts";
import * as messages from "./messages/errors.ts";
import { recordedPath } from "./recorded-path.ts";
import * as responses from "./responses/errors.ts";

/**
 * Each protocol's model paths below /e/{episode}/ and its error envelope: one row a
 * protocol, so a new protocol is a compile error here until it has both.
 */
const ingressProtocols: Record<Protocol, { path: RegExp; render: (error: SidecarError) => Response }> = {
  responses: { path: /^v1\/responses$/, render: responses.renderError },
  gemini: { path: /^gemini\//, render: gemini.renderError },
  messages: { path: /^anthropic\//, render: messages.renderError },
};
const protocolNames = Object.keys(ingressProtocols) as Protocol[];

const episodePath = /^\/e\/([^/]+)\/(.*)$/s;

/** Which ingress protocol a path belongs to, with its (still encoded) episode id segment. */
export function ingressProtocolOf(path: string): { protocol: Protocol; episodeId: string } | undefined {
  const match = episodePath.exec(path);
  if (!match?.[1]) return undefined;
  const below = match[2] ?? "";
  const protocol = protocolNames.find((name) => ingressProtocols[name].path.test(below));
  return protocol === undefined ? undefined : { protocol, episodeId: match[1] };
}

/** `entry` says what was refused and why (operation, reason, the limit at stake). */
export function refuseIngressRequest(
  deps: IngressRouteDeps,
  request: Request,
  error: SidecarError,
  entry: { operation: string } & Record<string, unknown>,
): Response | undefined {
  const url = new URL(request.url);
  const ingress = ingressProtocolOf(url.pathname);
  if (!ingress) return undefined;
  const render = ingressProtocols[ingress.protocol].render;
  const episode = authenticatedEpisode(deps, request, url, ingress.episodeId);
  if (!episode) return render(error);
  return answerAuxiliary(
    deps.logger,
    episode,
    { ...entry, protocol: ingress.protocol, path: recordedPath(url) },
    error,
    render,
  );
}

/** The episode a refusal is recorded in: only a known one whose key the request carries. */
function authenticatedEpisode(deps: IngressRouteDeps, request: Request, url: URL, encodedId: string) {
  let episode: ReturnType<IngressRouteDeps["episodes"]["get"]>;
  try {
    episode = deps.episodes.get(decodeURIComponent(encodedId));
  } catch {
    return undefined; // unknown episode (or an undecodable id): nothing to record it in
  }
  return credentialMatches(presentedKey(request.headers, url.searchParams), episode.ingressKey)
    ? episode
    : undefined;
}
