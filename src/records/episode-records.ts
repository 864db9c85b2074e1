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
 * Every line starts with the records format version, `"v":3` (docs/records.md);
 * images in lines are references to the data directory's blob store
 * (image-references.ts), and so are long strings of spliced JSON bodies written
 * before (text-references.ts), each blob written before the line. Read records
 * with read-records.ts, which resolves them.
 * Secrets never reach these files: callers record bodies, never credentials, and
 * every line passes through the redactor as a last guard.
 *
 * Writes go through record-files.ts (whole lines or an error, never a short write
 * counted as written). A write that fails (full disk …) throws RecordsWriteError
 * to the caller, which fails that exchange or callback; the first such failure is
 * kept in `failure` for the episode's status. `sync` makes everything appended
 * so far durable (fdatasync, group commit) when durability is on.
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { type SplitText, textPieces, wholeText } from "../body/split-text.ts";
import type { LedgerEvent } from "../ledger/events.ts";
import type { JsonText, KnownSpan } from "../lib/frozen-json.ts";
import { RecordsWriteError } from "./append-file.ts";
import type { BlobStore } from "./blob-store.ts";
import type { ExchangeLine } from "./exchange-lines.ts";
import { type ExchangeRecordVerbs, exchangeVerbs, type WriteExchangeLine } from "./exchange-verbs.ts";
import type { GroupCommit, SyncOptions } from "./group-commit.ts";
import { externalizeImages, externalizeImageValue, hasReferenceForm } from "./image-references.ts";
import { type BodyPiece, bodyPieces, externalizePieces } from "./known-spans.ts";
import { frozenRecordsError, openRecordFiles } from "./record-files.ts";
import { type RecurringTexts, textReferenceMarker } from "./text-references.ts";

/**
 * Version 1: images inline as base64 (no `v` member). Version 2: images in the blob
 * store. Version 3: also long strings of spliced JSON seen before (text-references.ts).
 */
export const recordsFormatVersion = 3;

export type RecordsOptions = {
  dir: string;
  clock: () => number;
  /** Replaces secret values anywhere in a line before it is written. */
  redact: (line: string) => string;
  /** Told the bytes of each append that reached the file (metrics count records bytes written). */
  written?: (file: string, bytes: number) => void;
  /** fdatasync scheduler (config records.fsync); undefined = lines survive kill -9, not a power cut. */
  groupCommit?: GroupCommit;
  /** Where the images of record lines go (shared by the episodes of a data directory). */
  blobs: Pick<BlobStore, "put" | "durable" | "durableNow">;
  /** Long strings already written once, stored in the blob store from then on (shared likewise); none = kept inline. */
  texts?: RecurringTexts;
};

/** A split JSON text (split-text.ts) and its known spans, offsets in its reduced text. */
export type SplitJson = { split: SplitText; known: readonly KnownSpan[] };

/** Members of a line whose value is spliced in rather than serialised (see formatRecordLine). */
export type SplicedMembers = {
  /**
   * JSON text already produced (the upstream body as sent, a client's body as received),
   * maybe with its known spans; a client's body split, so that its images are never
   * joined into one text (split-text.ts; its known spans are offsets in its reduced text).
   */
  json?: Record<string, string | JsonText | SplitJson>;
  /** Any text (e.g. a body that is not single-line JSON), stored as a JSON string. */
  text?: Record<string, string>;
};

const stamp = (clock: () => number) => ({ v: recordsFormatVersion, at: new Date(clock()).toISOString() });

/**
 * One record line: `{"v":3,"at":…,…fields,…spliced}` with its images moved to the
 * blob store, then redacted. Spliced members come last: JSON text is put in verbatim
 * (never parsed or serialised again) with its long strings seen before referenced,
 * other text as a string with its images referenced. A line whose own content
 * already contains a reference form is kept with its images and strings inline and
 * marked `"images_inline":true`, so a reader never mistakes a client's text for a
 * reference.
 */
export function formatRecordLine(
  options: Pick<RecordsOptions, "clock" | "redact" | "texts"> & { blobs: Pick<BlobStore, "put"> },
  fields: Record<string, unknown>,
  spliced: SplicedMembers = {},
): string {
  const head = JSON.stringify({ ...stamp(options.clock), ...fields });
  const marked = (part: string) => hasReferenceForm(part) || part.includes(textReferenceMarker);
  // A split text is cut at its known spans in its reduced text: its taken-out strings are base64,
  // never a reference form, and no known span holds one.
  const jsons = Object.entries(spliced.json ?? {}).map(([key, json]) => {
    const split = typeof json === "object" && "split" in json ? json.split : undefined;
    const text = split
      ? { text: split.reduced, known: (json as SplitJson).known }
      : (json as string | JsonText);
    return [key, bodyPieces(text, options.texts, marked), split] as const;
  });
  const texts = Object.entries(spliced.text ?? {});
  const inline =
    [head, ...texts.map(([, text]) => text)].some(marked) ||
    jsons.some(([, pieces]) => pieces.some((piece) => piece.scan?.referenceForm ?? marked(piece.text)));
  // Each part on its own: an image literal is a whole string token, never across a splice,
  // and a spliced body (tens of MB with a camera history) is never first copied into the line.
  const externalized = (text: string) => (inline ? text : externalizeImages(text, options.blobs));
  // A piece of a split text likewise, with each taken-out string (one whole token) on its own.
  const externalizedSplit = (split: SplitText) => (text: string) =>
    textPieces({ ...split, reduced: text })
      .map((piece, i) =>
        typeof piece === "string" && i % 2 === 0
          ? externalized(piece)
          : externalizeImageValue(piece, options.blobs, split.hold),
      )
      .join("");
  const recurring = (json: string) => (inline || !options.texts ? json : options.texts.externalize(json));
  /** The spliced body's parts, pushed onto the line's. */
  const spliceJson = (pieces: BodyPiece[], split: SplitText | undefined, out: string[]) => {
    if (inline) {
      if (split) out.push(wholeText(split));
      else for (const piece of pieces) out.push(piece.text);
      return;
    }
    const own = split ? externalizedSplit(split) : externalized;
    // Everything either step replaces is a string token (an image, a placeholder, a long
    // string): a piece without a quote (the comma between two known items) has none.
    externalizePieces(
      pieces,
      options.texts,
      (text) => (text.includes('"') ? recurring(own(text)) : text),
      out,
    );
  };
  const base = externalized(head);
  if (jsons.length === 0 && !inline && texts.length === 0) return options.redact(base);
  // The line's parts, joined once: a flat string, neither a rope the encoder would flatten
  // again nor a body copied into a member and the member into the line (two copies of it).
  const parts: string[] = [base.slice(0, -1)];
  for (const [key, pieces, split] of jsons) {
    parts.push(`,${JSON.stringify(key)}:`);
    spliceJson(pieces, split, parts);
  }
  if (inline) parts.push(',"images_inline":true');
  for (const [key, text] of texts)
    parts.push(`,${JSON.stringify(key)}:${JSON.stringify(externalized(text))}`);
  parts.push("}");
  return options.redact(parts.join(""));
}

/** An episode's records: its exchange lines through the verbs, its ledger journal, its description. */
export interface EpisodeRecords extends ExchangeRecordVerbs {
  readonly dir: string;
  /** The one write under the verbs (exchange-verbs.ts); callers use the verbs. */
  exchangeLine: WriteExchangeLine;
  /** The ledger's journal (ledger/events.ts). */
  ledger(event: LedgerEvent): void;
  auxiliary(data: Record<string, unknown>): void;
  /** Rewrites episode.json at once (a state change). */
  describe(episode: unknown): void;
  /** Rewrites episode.json off the event loop; resolves once on disk or superseded. */
  describeInBackground(episode: unknown): Promise<void>;
  /** Writes the final marker; nothing is appended after it. */
  freeze(marker: Record<string, unknown>): void;
  /** Resolves once every line appended so far is on stable storage (when durability is on). */
  sync(options?: SyncOptions): Promise<void>;
  readonly frozen: boolean;
  /** The first write that failed (full disk …), for the episode's status. */
  readonly failure: string | undefined;
}

export function createEpisodeRecords(options: RecordsOptions): EpisodeRecords {
  mkdirSync(options.dir, { recursive: true });
  let frozen = false;
  const path = (name: string) => join(options.dir, name);

  const files = openRecordFiles(options.dir, options);
  /** With durability on, lines that refer to blobs are fdatasync'ed only once those are durable. */
  function appendLines(name: string, lines: string[]): void {
    const refersToBlobs =
      options.groupCommit !== undefined &&
      lines.some((line) => hasReferenceForm(line) || line.includes(textReferenceMarker));
    files.append(name, lines, refersToBlobs ? options.blobs.durable() : undefined);
  }
  let pendingExchangeLines: string[] = [];
  function append(name: string, value: Record<string, unknown>): void {
    if (frozen) throw frozenRecordsError(options.dir, name);
    appendLines(name, [formatRecordLine(options, value)]);
  }
  /** Whole or not at all: a description or marker is never half a file. */
  function replaceFile(name: string, text: string): void {
    const tmp = path(`${name}.tmp`);
    try {
      writeFileSync(tmp, text);
      renameSync(tmp, path(name));
    } catch (error) {
      rmSync(tmp, { force: true });
      throw files.noteFailure(new RecordsWriteError(path(name), error));
    }
  }
  // episode.json written off the event loop (describeInBackground): one write at a
  // time, the newest description waiting. A synchronous `describe` (a state change)
  // always lands at once; one given since a background description was asked for
  // makes that description stale: dropped before its rename, or, if its rename was
  // already under way, followed by the synchronous one written again.
  let syncDescriptions = 0;
  let lastSyncText: string | undefined;
  let backgroundWrite: Promise<void> | undefined;
  let nextDescription: { text: string; requestedAfter: number; done: PromiseWithResolvers<void> } | undefined;
  async function writeDescriptionInBackground(text: string, requestedAfter: number): Promise<void> {
    const tmp = path("episode.json.bg.tmp");
    try {
      const file = await open(tmp, "w");
      try {
        await file.writeFile(text);
        await file.datasync();
      } finally {
        await file.close();
      }
      if (frozen || syncDescriptions !== requestedAfter) {
        await rm(tmp, { force: true });
        return;
      }
      // In the thread pool: on ext4 a rename over an existing file takes ~5 ms (measured).
      await rename(tmp, path("episode.json"));
      if (syncDescriptions !== requestedAfter && lastSyncText !== undefined)
        replaceFile("episode.json", lastSyncText);
    } catch (error) {
      await rm(tmp, { force: true }).catch(() => {});
      throw files.noteFailure(
        error instanceof RecordsWriteError ? error : new RecordsWriteError(path("episode.json"), error),
      );
    }
  }
  function drainDescriptions(): void {
    const next = nextDescription;
    nextDescription = undefined;
    if (!next) {
      backgroundWrite = undefined;
      return;
    }
    backgroundWrite = writeDescriptionInBackground(next.text, next.requestedAfter).then(
      next.done.resolve,
      next.done.reject,
    );
    void backgroundWrite.finally(drainDescriptions);
  }

  /**
   * Exchange stages are written at the exchange's boundaries — just before the
   * upstream request, when the upstream answered (before anything is delivered)
   * and at its final status — each boundary one write of the lines gathered so
   * far: a crash during the upstream wait still leaves the client's request on
   * disk, a crash during delivery still leaves the model's answer, and a text
   * exchange costs three writes, not six.
   */
  function exchangeLine(exchangeId: string, line: ExchangeLine, spliced: SplicedMembers = {}): void {
    if (frozen) throw frozenRecordsError(options.dir, "exchanges.jsonl");
    pendingExchangeLines.push(formatRecordLine(options, { exchange: exchangeId, ...line }, spliced));
    const { stage } = line;
    if (stage === "upstream_request" || stage === "upstream_response" || stage === "status") {
      const lines = pendingExchangeLines;
      pendingExchangeLines = [];
      appendLines("exchanges.jsonl", lines);
    }
  }

  return {
    dir: options.dir,
    exchangeLine,
    ...exchangeVerbs(exchangeLine),
    ledger(event) {
      append("ledger.jsonl", event);
    },
    auxiliary(data: Record<string, unknown>): void {
      append("auxiliary.jsonl", data);
    },
    /** Rewrites episode.json, compact: it is rewritten often and a manifest can be large. */
    describe(episode: unknown): void {
      syncDescriptions += 1;
      lastSyncText = options.redact(JSON.stringify(episode));
      replaceFile("episode.json", lastSyncText);
    },
    /**
     * The same, written and renamed without blocking the event loop on the disk (for
     * the frequent rewrites of counters); resolves once on disk, or once superseded by
     * a later description.
     */
    describeInBackground(episode: unknown): Promise<void> {
      if (frozen) return Promise.resolve();
      const done = Promise.withResolvers<void>();
      // A description still waiting is superseded by this one: it settles with it.
      const superseded = nextDescription;
      nextDescription = {
        text: options.redact(JSON.stringify(episode)),
        requestedAfter: syncDescriptions,
        done,
      };
      if (superseded) done.promise.then(superseded.done.resolve, superseded.done.reject);
      if (!backgroundWrite) drainDescriptions();
      return done.promise;
    },
    freeze(marker: Record<string, unknown>): void {
      if (frozen) return;
      frozen = true;
      try {
        if (options.groupCommit) options.blobs.durableNow();
        files.closeAll();
      } finally {
        replaceFile(
          "frozen.json",
          options.redact(JSON.stringify({ ...stamp(options.clock), ...marker }, null, 2)),
        );
      }
    },
    /** Resolves once every line appended so far is on stable storage (when durability is on). */
    sync: (syncOptions?: SyncOptions): Promise<void> => files.sync(syncOptions),
    get frozen() {
      return frozen;
    },
    /** The first write that failed (full disk …), for the episode's status. */
    get failure() {
      return files.failure;
    },
  };
}
