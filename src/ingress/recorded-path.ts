/**
 * The request path an ingress records (client_request and auxiliary lines) and logs:
 * as received, from `/e/<episode>` on, with its query, except a `key` parameter:
 * Gemini CLI may send its API key there, and no credential reaches records or logs.
 * One form for every protocol, so the records of different clients read alike.
 */
export function recordedPath(url: URL): string {
  // Without a key the query stays byte for byte; with one the rest is re-encoded.
  if (!url.searchParams.has("key")) return `${url.pathname}${url.search}`;
  const query = new URLSearchParams(url.searchParams);
  query.delete("key");
  return query.size > 0 ? `${url.pathname}?${query}` : url.pathname;
}
