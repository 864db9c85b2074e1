/**
 * An episode's records directory: append-only JSON lines, one file per kind.
 *   exchanges.jsonl  one line per exchange stage (client request, after context,
 *                    upstream request and response, delivered, status)
 *   ledger.jsonl     the delivered-call ledger's journal
 *   auxiliary.jsonl  local answers that are not model exchanges (countTokens …)
 *   episode.json     the episode's description (rewritten, not appended)
 *   frozen.json      the final marker written at shutdown; nothing is appended after it
 *                    ({reason, drain, complete, unfinished, state}; complete:false when
 *                    the drain overran its deadline: the records may lack late events)
 *   restart-NNN.jsonl  written by a later process that restored the episode read-only;
 *                    the files above are never touched again (restart-records.ts)
 * Secrets never reach these files: callers record bodies, never credentials, and
 * every line passes through the redactor as a last guard.
 */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { appendJsonLine } from "./jsonl-file.ts";

export type ExchangeStage =
  | "client_request"
  | "after_context"
  | "upstream_request"
  | "upstream_response"
  | "delivered"
  | "status";

export type RecordsOptions = {
  dir: string;
  clock: () => number;
  /** Replaces secret values anywhere in a line before it is written. */
  redact: (line: string) => string;
};

export function createEpisodeRecords(options: RecordsOptions) {
  mkdirSync(options.dir, { recursive: true });
  let frozen = false;
  const path = (name: string) => join(options.dir, name);
  const now = () => new Date(options.clock()).toISOString();

  function append(name: string, value: Record<string, unknown>): void {
    if (frozen) throw new Error(`records of ${options.dir} are frozen; refusing to append to ${name}`);
    const line = options.redact(JSON.stringify({ at: now(), ...value }));
    appendJsonLine(path(name), JSON.parse(line));
  }

  return {
    dir: options.dir,
    exchange(exchangeId: string, stage: ExchangeStage, data: Record<string, unknown>): void {
      append("exchanges.jsonl", { exchange: exchangeId, stage, ...data });
    },
    ledger(event: Record<string, unknown>): void {
      append("ledger.jsonl", event);
    },
    auxiliary(data: Record<string, unknown>): void {
      append("auxiliary.jsonl", data);
    },
    describe(episode: unknown): void {
      const tmp = path("episode.json.tmp");
      writeFileSync(tmp, options.redact(JSON.stringify(episode, null, 2)));
      renameSync(tmp, path("episode.json"));
    },
    freeze(marker: Record<string, unknown>): void {
      if (frozen) return;
      // Written whole or not at all: a marker must never be half a file.
      writeFileSync(
        path("frozen.json.tmp"),
        options.redact(JSON.stringify({ at: now(), ...marker }, null, 2)),
      );
      renameSync(path("frozen.json.tmp"), path("frozen.json"));
      frozen = true;
    },
    get frozen() {
      return frozen;
    },
  };
}

export type EpisodeRecords = ReturnType<typeof createEpisodeRecords>;

/** A redactor that removes every given secret value wherever it appears. */
export function createRedactor(secrets: () => (string | undefined)[]): (text: string) => string {
  return (text) => {
    let out = text;
    for (const secret of secrets()) {
      if (secret && secret.length >= 4) out = out.split(secret).join("<redacted>");
    }
    return out;
  };
}
