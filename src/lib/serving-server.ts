/**
 * The part of Bun's server that request limits use, taken from hono's context
 * (`Bun.serve({ fetch: (req, server) => app.fetch(req, { server }) })`); absent when
 * a test drives the app with app.request(), where no timer runs.
 */
import type { Context } from "hono";

export type ServingServer = {
  readonly pendingRequests: number;
  timeout(request: Request, seconds: number): void;
};

export function servingServer(c: Context): ServingServer | undefined {
  const server = (c.env as { server?: ServingServer } | undefined)?.server;
  return server && typeof server.timeout === "function" ? server : undefined;
}
