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
import { closeSync, mkdirSync, openSync, renameSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";

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
  /** Told the bytes of each append that reached the file (metrics count records bytes written). */
  written?: (file: string, bytes: number) => void;
};

export function createEpisodeRecords(options: RecordsOptions) {
  mkdirSync(options.dir, { recursive: true });
  let frozen = false;
  const path = (name: string) => join(options.dir, name);
  const now = () => new Date(options.clock()).toISOString();

  // One descriptor per file, opened for append on first use: each line is one
  // write(2) of the whole line, so a crash leaves a prefix of whole lines (or a
  // torn last one, which readers detect), and nothing is reopened per line.
  const descriptors = new Map<string, number>();
  let pendingExchangeLines: string[] = [];
  function appendLines(name: string, lines: string[]): void {
    let fd = descriptors.get(name);
    if (fd === undefined) {
      fd = openSync(path(name), "a");
      descriptors.set(name, fd);
    }
    const bytes = writeSync(fd, `${lines.join("\n")}\n`);
    options.written?.(name, bytes);
  }
  function append(name: string, value: Record<string, unknown>): void {
    if (frozen) throw new Error(`records of ${options.dir} are frozen; refusing to append to ${name}`);
    appendLines(name, [options.redact(JSON.stringify({ at: now(), ...value }))]);
  }
  function closeAll(): void {
    for (const fd of descriptors.values()) closeSync(fd);
    descriptors.clear();
  }

  return {
    dir: options.dir,
    /**
     * Exchange stages are written at the exchange's two boundaries — just before
     * the upstream request and at its final status — each boundary one write of
     * the lines gathered so far: a crash during the upstream wait still leaves
     * the client's request on disk, and a text exchange costs two writes, not six.
     */
    exchange(
      exchangeId: string,
      stage: ExchangeStage,
      data: Record<string, unknown>,
      /** Fields whose value is already JSON text (e.g. the upstream body as sent), spliced in verbatim. */
      rawJson: Record<string, string> = {},
    ): void {
      if (frozen)
        throw new Error(`records of ${options.dir} are frozen; refusing to append to exchanges.jsonl`);
      let line = JSON.stringify({ at: now(), exchange: exchangeId, stage, ...data });
      for (const [key, json] of Object.entries(rawJson)) {
        line = `${line.slice(0, -1)},${JSON.stringify(key)}:${json}}`;
      }
      pendingExchangeLines.push(options.redact(line));
      if (stage === "upstream_request" || stage === "status") {
        appendLines("exchanges.jsonl", pendingExchangeLines);
        pendingExchangeLines = [];
      }
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
      closeAll();
    },
    get frozen() {
      return frozen;
    },
  };
}

export type EpisodeRecords = ReturnType<typeof createEpisodeRecords>;

/** Credentials the sidecar generates (ids.ts `token`): recognised by shape in one pass. */
const generatedToken = /ura_(?:key|mcp)_[A-Za-z0-9_-]{20,}/g;

/**
 * A redactor that removes every secret wherever it appears: tokens the sidecar
 * generated by their shape (one regex pass, however many episodes exist — a line
 * can be megabytes of base64), and the given external secrets (upstream key,
 * control password) by value.
 */
export function createRedactor(secrets: () => (string | undefined)[]): (text: string) => string {
  return (text) => {
    let out = text.includes("ura_") ? text.replace(generatedToken, "<redacted>") : text;
    for (const secret of secrets()) {
      if (secret && secret.length >= 4 && !secret.startsWith("ura_") && out.includes(secret)) {
        out = out.split(secret).join("<redacted>");
      }
    }
    return out;
  };
}
