/**
 * Reads an episode's records and resolves their blob references: the one reader
 * for everything that consumes records (the `records` command, dataset and
 * fixture export, the UI, shipping), so none parses the files on its own.
 * The layout and line format are documented in docs/records.md.
 *
 *   const records = openRecords(dataDir);            // a data directory
 *   records.episodeIds()                             // ["ep_…", …]
 *   const episode = records.readEpisode(id);         // every file, torn tails reported
 *   episode.exchanges[0].stage("client_request")     // a stage's line: parsed value + exact text
 *   episode.exchanges[0].line("upstream_response")   // the same, typed by its schema (exchange-lines.ts)
 *   records.clientRequestText(exchange)              // the client's request byte for byte
 *   records.upstreamRequestText(exchange)            // the upstream wire body byte for byte
 *   records.resolve(line.value)                      // references → data URLs / base64
 *   records.blobs.read(digest)                       // one blob's bytes (digest-checked)
 *
 * Long strings a version 3 line refers to (text-references.ts) are put back as the
 * file is read, so every line's value and text are as if they had been written
 * inline: readers see the strings, never a text reference.
 * Every format version is read: 1 (no `v` member, images inline), 2 (images as
 * references to `<data_dir>/blobs/sha256/`) and 3 (long strings seen before too).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { errorMessage } from "../lib/error-message.ts";
import { episodeIdPattern } from "../lib/ids.ts";
import { type BlobStore, createBlobStore } from "./blob-store.ts";
import { type ExchangeLineRead, type ExchangeStage, readExchangeLine } from "./exchange-lines.ts";
import { inlineImages, resolveBlobReferences } from "./image-references.ts";
import { listRestartFiles, stateAfterRestore } from "./restart-records.ts";
import { inlineTexts, resolveTextReferences, textReferenceMarker } from "./text-references.ts";

/** One record line: its parsed value and its exact text (needed to rebuild spliced bodies). */
export type RecordLine = { value: Record<string, unknown>; text: string; file: string; line: number };

export type RecordedExchange = {
  id: string;
  /** The exchange's lines in the order written (from exchanges.jsonl, then restart files). */
  lines: RecordLine[];
  /** The stage's last line as recorded. */
  stage(stage: ExchangeStage): RecordLine | undefined;
  /** The stage's last line read by its schema (exchange-lines.ts); undefined when absent or not one. */
  line<S extends ExchangeStage>(stage: S): ExchangeLineRead<S> | undefined;
};

export type EpisodeRecordsView = {
  id: string;
  dir: string;
  /** episode.json, frozen.json (undefined when absent). */
  description: Record<string, unknown> | undefined;
  /**
   * The episode's last known state: episode.json's, unless a later process restored the
   * episode (restart files), which never rewrites episode.json (see `lastKnownState`).
   */
  state: string | undefined;
  frozen: Record<string, unknown> | undefined;
  exchanges: RecordedExchange[];
  ledger: RecordLine[];
  auxiliary: RecordLine[];
  /** Each restart-NNN.jsonl file's lines, oldest first. */
  restarts: { file: string; lines: RecordLine[] }[];
  /** Files whose last line is incomplete (a crash mid-write): file → the partial text. */
  tornTails: Record<string, string>;
};

type RawLines = { lines: RecordLine[]; tornTail: string | undefined };

/** A record file that cannot be read as records (a line that is not JSON, other than a torn last one). */
export class RecordFileUnreadable extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(message);
  }
}

/** The lines of a JSON-lines file; only the last line may be torn, anything else unparseable throws. */
export function readRecordLines(path: string): RawLines {
  if (!existsSync(path)) return { lines: [], tornTail: undefined };
  const name = path.split("/").at(-1) ?? path;
  const texts = readFileSync(path, "utf8").split("\n");
  const last = texts.pop() ?? "";
  const lines: RecordLine[] = [];
  for (const [i, text] of texts.entries()) {
    if (text === "") continue;
    try {
      lines.push({ value: JSON.parse(text) as Record<string, unknown>, text, file: name, line: i + 1 });
    } catch {
      if (i === texts.length - 1 && last === "") return { lines, tornTail: text };
      throw new RecordFileUnreadable(name, `${path}: line ${i + 1} is not JSON`);
    }
  }
  return { lines, tornTail: last === "" ? undefined : last };
}

function readJsonFile(path: string): Record<string, unknown> | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (error) {
    throw new RecordFileUnreadable(basename(path), `${path} is not JSON: ${errorMessage(error)}`);
  }
}

function skipString(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0) throw new Error("unterminated string");
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    i = quote + 1;
  }
}

function skipValue(text: string, start: number): number {
  const first = text[start];
  if (first === '"') return skipString(text, start);
  if (first !== "{" && first !== "[") {
    let i = start;
    while (i < text.length && !",}] \t\n\r".includes(text[i] as string)) i++;
    return i;
  }
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === '"') i = skipString(text, i) - 1;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  throw new Error("unterminated value");
}

/** The exact JSON text of a top-level member of an object's JSON text. */
export function memberText(objectText: string, key: string): string | undefined {
  const skipSpace = (i: number) => {
    while (" \t\n\r".includes(objectText[i] ?? "x")) i++;
    return i;
  };
  let i = skipSpace(skipSpace(0) + 1);
  while (i < objectText.length && objectText[i] !== "}") {
    const keyEnd = skipString(objectText, i);
    const name = JSON.parse(objectText.slice(i, keyEnd)) as string;
    const valueStart = skipSpace(skipSpace(keyEnd) + 1);
    const valueEnd = skipValue(objectText, valueStart);
    if (name === key) return objectText.slice(valueStart, valueEnd);
    i = skipSpace(valueEnd);
    if (objectText[i] === ",") i = skipSpace(i + 1);
  }
  return undefined;
}

/**
 * The newest `state` a restart file's `restarted` or `stopped` line records; with restart
 * files but no such line (a report written before reports said the state, or a first line
 * torn by kill -9), episode.json's state as restoring it makes it (running → interrupted).
 */
function lastKnownState(
  description: Record<string, unknown> | undefined,
  restarts: { lines: RecordLine[] }[],
): string | undefined {
  const recorded = restarts
    .flatMap((restart) => restart.lines)
    .findLast(
      (line) =>
        (line.value.type === "restarted" || line.value.type === "stopped") &&
        typeof line.value.state === "string",
    )?.value.state as string | undefined;
  if (recorded !== undefined) return recorded;
  const described = typeof description?.state === "string" ? description.state : undefined;
  return restarts.length > 0 && described !== undefined ? stateAfterRestore(described) : described;
}

function groupExchanges(lines: RecordLine[]): RecordedExchange[] {
  const byId = new Map<string, RecordLine[]>();
  for (const line of lines) {
    const id = line.value.exchange;
    if (typeof id !== "string") continue;
    const group = byId.get(id) ?? [];
    group.push(line);
    byId.set(id, group);
  }
  return [...byId].map(([id, group]) => ({
    id,
    lines: group,
    stage: (stage) => group.findLast((line) => line.value.stage === stage),
    line(stage) {
      const line = group.findLast((candidate) => candidate.value.stage === stage);
      return line === undefined ? undefined : readExchangeLine(stage, line.value);
    },
  }));
}

/** A data directory's records, read with their references resolved. */
export interface Records {
  readonly dataDir: string;
  readonly blobs: BlobStore;
  /** Ids of the episodes with a records directory, sorted. */
  episodeIds(): string[];
  /** Throws for an id that is not one, or an episode without records here. */
  readEpisode(id: string): EpisodeRecordsView;
  /** An episode's records directory given by its path (its blobs still come from this data directory). */
  readEpisodeDir(dir: string): EpisodeRecordsView;
  /** The client's request body exactly as received. */
  clientRequestText(exchange: RecordedExchange): string | undefined;
  /** The upstream request body exactly as sent. */
  upstreamRequestText(exchange: RecordedExchange): string | undefined;
  /** The body delivered to the client exactly as sent. */
  deliveredText(exchange: RecordedExchange): string | undefined;
  /** The line's text with every image inline (text members too): a self-contained line. */
  inlineLine(line: RecordLine): string;
  /**
   * A parsed value with every blob reference replaced by the data URL or base64 it
   * stands for, and every text reference by its string (for a line parsed on its own).
   */
  resolve(value: unknown): unknown;
}

export function openRecords(dataDir: string, blobs: BlobStore = createBlobStore(dataDir)): Records {
  const episodesDir = join(dataDir, "episodes");
  const read = (digest: string) => blobs.read(digest);

  /** The member of a line holding text with its images referenced inside the string, if any. */
  function textMember(line: RecordLine): "body_text" | "body" | undefined {
    if (typeof line.value.body_text === "string") return "body_text";
    const sse =
      line.value.stage === "delivered" && !String(line.value.content_type).startsWith("application/json");
    return sse && typeof line.value.body === "string" ? "body" : undefined;
  }

  /** The line's text with every image inline (text members too): a self-contained line. */
  function inlineLine(line: RecordLine): string {
    if (line.value.images_inline === true) return line.text;
    const member = textMember(line);
    const raw = member === undefined ? undefined : memberText(line.text, member);
    if (member === undefined || raw === undefined) return inlineImages(line.text, read);
    // Text members are spliced last, so the member's text is the line's tail.
    const start = line.text.length - 1 - raw.length;
    const inlinedText = JSON.stringify(inlineImages(line.value[member] as string, read));
    return `${inlineImages(line.text.slice(0, start), read)}${inlinedText}}`;
  }

  /** A body as recorded (spliced JSON `body`, or the string `body_text`), images inlined: the exact text. */
  function bodyText(line: RecordLine | undefined): string | undefined {
    if (!line) return undefined;
    const inline = line.value.images_inline === true;
    const restore = (text: string) => (inline ? text : inlineImages(text, read));
    // Text (a body that was not single-line JSON, an SSE stream) is a string member;
    // a JSON body is spliced JSON.
    const member = textMember(line);
    if (member !== undefined) return restore(line.value[member] as string);
    if (line.value.body === undefined) return undefined;
    const raw = memberText(line.text, "body");
    return raw === undefined ? undefined : restore(raw);
  }

  /** The line with the long strings it refers to put back (version 3 on; a line marked images_inline has none). */
  function withTexts(line: RecordLine): RecordLine {
    if (!line.text.includes(textReferenceMarker)) return line;
    const version = line.value.v;
    if (typeof version !== "number" || version < 3 || line.value.images_inline === true) return line;
    const text = inlineTexts(line.text, read);
    return { ...line, text, value: JSON.parse(text) as Record<string, unknown> };
  }

  function readEpisodeDir(dir: string): EpisodeRecordsView {
    const tornTails: Record<string, string> = {};
    const file = (name: string) => {
      const contents = readRecordLines(join(dir, name));
      if (contents.tornTail !== undefined) tornTails[name] = contents.tornTail;
      return contents.lines.map(withTexts);
    };
    const exchangeLines = file("exchanges.jsonl");
    const restarts = listRestartFiles(dir).map((name) => ({ file: name, lines: file(name) }));
    const restartLines = (type: string) =>
      restarts.flatMap((restart) => restart.lines.filter((line) => line.value.type === type));
    const description = readJsonFile(join(dir, "episode.json"));
    return {
      id: basename(dir),
      dir,
      description,
      state: lastKnownState(description, restarts),
      frozen: readJsonFile(join(dir, "frozen.json")),
      exchanges: groupExchanges([...exchangeLines, ...restartLines("exchange")]),
      ledger: file("ledger.jsonl"),
      auxiliary: file("auxiliary.jsonl"),
      restarts,
      tornTails,
    };
  }

  return {
    dataDir,
    blobs,
    episodeIds() {
      if (!existsSync(episodesDir)) return [];
      return readdirSync(episodesDir)
        .filter((name) => episodeIdPattern.test(name))
        .sort();
    },
    readEpisode(id) {
      if (!episodeIdPattern.test(id))
        throw new Error(`not an episode id: ${JSON.stringify(id.slice(0, 80))}`);
      const dir = join(episodesDir, id);
      if (!existsSync(dir)) throw new Error(`no records for episode ${id} in ${dataDir}`);
      return readEpisodeDir(dir);
    },
    readEpisodeDir,
    clientRequestText: (exchange) => bodyText(exchange.stage("client_request")),
    upstreamRequestText: (exchange) => bodyText(exchange.stage("upstream_request")),
    deliveredText: (exchange) => bodyText(exchange.stage("delivered")),
    inlineLine,
    resolve: (value) => resolveTextReferences(resolveBlobReferences(value, read), read),
  };
}
