/**
 * The one seam observability hangs on. Everything worth counting or tracing is
 * already written to an episode's records (exchange stages, ledger transitions,
 * local answers), so observers see those writes as events instead of calls
 * scattered through the exchange pipeline, the ledger and the ingresses: the
 * records stay the single account of what happened, and metrics, traces and the
 * timeline page cannot disagree with them.
 */
import type { LedgerEvent } from "../ledger/events.ts";
import type { ExchangeLine } from "../records/exchange-lines.ts";

export type ObservedEvent =
  | {
      kind: "exchange_stage";
      episode: string;
      exchange: string;
      /** Milliseconds since the epoch, from the sidecar's clock. */
      at: number;
      /** The line's fields as written (without its spliced bodies). */
      line: ExchangeLine;
    }
  | { kind: "ledger"; episode: string; at: number; event: LedgerEvent }
  | { kind: "auxiliary"; episode: string; at: number; data: Record<string, unknown> }
  | { kind: "records_written"; episode: string; file: string; bytes: number }
  | { kind: "records_failure"; episode: string; file: string; message: string };

export type Observer = { observe(event: ObservedEvent): void };

export const noObserver: Observer = { observe() {} };

/**
 * Several observers as one. An observer that throws is reported and skipped:
 * counting a tool call must never be the reason it fails.
 */
export function combineObservers(observers: Observer[], onError: (error: unknown) => void): Observer {
  if (observers.length === 0) return noObserver;
  return {
    observe(event) {
      for (const observer of observers) {
        try {
          observer.observe(event);
        } catch (error) {
          onError(error);
        }
      }
    },
  };
}
