/**
 * The HTTP request an MCP message arrived on, as an abort signal its handler can
 * read: the SDK's transport runs the `tools/call` handler inside the request's
 * `handleRequest`, so an AsyncLocalStorage set around that call reaches it. The
 * signal aborts when the client's connection for that request goes away (Bun aborts
 * `request.signal` on disconnect), which withdraws a call still awaiting approval
 * (create-ura-server.ts) — a client that is gone can no longer receive its answer.
 */
import { AsyncLocalStorage } from "node:async_hooks";

const connection = new AsyncLocalStorage<AbortSignal>();

/** Runs `handle` with `signal` as the connection of every message it dispatches. */
export function withConnectionSignal<T>(signal: AbortSignal, handle: () => T): T {
  return connection.run(signal, handle);
}

/** The connection of the message being handled, if it came over HTTP. */
export function connectionSignal(): AbortSignal | undefined {
  return connection.getStore();
}
