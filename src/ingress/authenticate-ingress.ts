/**
 * Resolves the episode of a model request and checks its ingress key, which each
 * client sends its own way: `Authorization: Bearer` (OpenAI, Claude Code with
 * ANTHROPIC_AUTH_TOKEN), `x-goog-api-key` (Gemini), `x-api-key` (Anthropic).
 * The key is never forwarded: the upstream gets the sidecar's own credential.
 * Once shutdown began, an authenticated request is refused with `unavailable`
 * (503 in each protocol's envelope). A restored episode is checked against the
 * digest of its key (see `credentialMatches`). Then the client's version pin and
 * MCP connection are checked (src/episodes/client-identity.ts).
 */
import type { Context } from "hono";
import type { Episode } from "../episodes/episode.ts";
import type { EpisodeStore } from "../episodes/episode-store.ts";
import { credentialMatches } from "../lib/credentials.ts";
import { SidecarError } from "../lib/errors.ts";

export function presentedKey(headers: Headers, query?: URLSearchParams): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(headers.get("authorization") ?? "")?.[1];
  return (
    bearer ?? headers.get("x-api-key") ?? headers.get("x-goog-api-key") ?? query?.get("key") ?? undefined
  );
}

export function authenticateIngress(
  store: EpisodeStore,
  episodeId: string,
  headers: Headers,
  query?: URLSearchParams,
  options: { modelRequest?: boolean } = {},
): Episode {
  const episode = store.get(episodeId);
  if (!credentialMatches(presentedKey(headers, query), episode.ingressKey)) {
    throw new SidecarError("authentication", `missing or wrong API key for episode ${episode.id}`);
  }
  const closing = store.closingReason();
  if (closing !== undefined) throw new SidecarError("unavailable", closing);
  // A model listing is not a model request: Claude Code lists at start-up, before its MCP side connects.
  if (options.modelRequest !== false) episode.checkModelRequest(headers);
  return episode;
}

/**
 * The episode of a request under /e/{episode}, authenticated. `keyInQuery`: the
 * key may also come as `?key=` (Gemini's API-key convention). `modelRequest: false`
 * (a model listing): the client's pin and MCP connection are not checked or counted.
 */
export function authenticateRequest(
  store: EpisodeStore,
  c: Context,
  options: { keyInQuery?: boolean; modelRequest?: boolean } = {},
): Episode {
  const query = options.keyInQuery ? new URL(c.req.url).searchParams : undefined;
  return authenticateIngress(store, c.req.param("episode") ?? "", c.req.raw.headers, query, {
    ...(options.modelRequest === false ? { modelRequest: false } : {}),
  });
}
