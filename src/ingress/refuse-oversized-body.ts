/**
 * The answer to a model request whose body is over `body_limit_bytes` (the app's
 * body limit calls this before any route runs): a final 400 `request_too_large`
 * in the client's own protocol envelope — 400 because it is final for all four
 * clients (OpenCode and Codex ship compiled binaries, so their handling of 413
 * could not be read from source). When the episode is known and the request
 * carries its key, the refusal is written to the episode's auxiliary records;
 * the body itself is never read, let alone recorded. Other paths (control, MCP)
 * get `undefined` and keep the app's generic 413.
 */
import { credentialMatches } from "../episodes/ids.ts";
import { SidecarError } from "../lib/errors.ts";
import type { RouteDeps } from "../server/route-deps.ts";
import { answerAuxiliary } from "./answer-auxiliary.ts";
import { presentedKey } from "./authenticate-ingress.ts";
import * as gemini from "./gemini/errors.ts";
import * as messages from "./messages/errors.ts";
import * as responses from "./responses/errors.ts";

export type IngressProtocol = "responses" | "gemini" | "messages";

const ingressPath = /^\/e\/([^/]+)\/(?:(v1\/responses)$|(gemini)\/|(anthropic)\/)/;

const renderers: Record<IngressProtocol, (error: SidecarError) => Response> = {
  responses: responses.renderError,
  gemini: gemini.renderError,
  messages: messages.renderError,
};

/** Which ingress protocol a path belongs to, with its (still encoded) episode id segment. */
export function ingressProtocolOf(
  path: string,
): { protocol: IngressProtocol; episodeId: string } | undefined {
  const match = ingressPath.exec(path);
  if (!match?.[1]) return undefined;
  const protocol: IngressProtocol = match[2] ? "responses" : match[3] ? "gemini" : "messages";
  return { protocol, episodeId: match[1] };
}

export function refuseOversizedBody(
  deps: RouteDeps,
  request: Request,
  limitBytes: number,
): Response | undefined {
  const url = new URL(request.url);
  const ingress = ingressProtocolOf(url.pathname);
  if (!ingress) return undefined;
  const error = new SidecarError(
    "request_too_large",
    `request body over the limit of ${limitBytes} bytes (body_limit_bytes)`,
  );
  const render = renderers[ingress.protocol];
  const episode = authenticatedEpisode(deps, request, url, ingress.episodeId);
  if (!episode) return render(error);
  const declared = request.headers.get("content-length");
  const entry = {
    protocol: ingress.protocol,
    operation: "body_limit",
    path: url.pathname,
    reason: "body over body_limit_bytes",
    limit_bytes: limitBytes,
    content_length: declared === null ? null : Number(declared),
  };
  return answerAuxiliary(deps.logger, episode, entry, error, render);
}

/** The episode a refusal is recorded in: only a known one whose key the request carries. */
function authenticatedEpisode(deps: RouteDeps, request: Request, url: URL, encodedId: string) {
  let episode: ReturnType<RouteDeps["episodes"]["get"]>;
  try {
    episode = deps.episodes.get(decodeURIComponent(encodedId));
  } catch {
    return undefined; // unknown episode (or an undecodable id): nothing to record it in
  }
  return credentialMatches(presentedKey(request.headers, url.searchParams), episode.ingressKey)
    ? episode
    : undefined;
}
