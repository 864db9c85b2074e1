/**
 * `export dataset`: episodes of a data directory → a validated fine-tuning
 * dataset (docs/dataset.md):
 *   <out>/dataset.jsonl   one training conversation per line
 *   <out>/images/         sha256-<hex>.webp, each image the model was sent, once
 *   <out>/manifest.json   counts, per-file SHA-256, the validation, what was skipped and why
 * Deterministic: episodes in id order, conversations in exchange order, nothing
 * taken from the clock or the output path, so the same records export byte for
 * byte the same. The dataset is written into a sibling temporary directory and
 * renamed into place whole: an interrupted export leaves no half dataset.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { Codecs } from "../images/codecs.ts";
import { errorMessage } from "../lib/error-message.ts";
import { buildConversations, type Conversation } from "./build-conversations.ts";
import { createSecretFinder } from "./find-secrets.ts";
import {
  type EpisodeRecordsRead,
  isBlobRef,
  listEpisodeIds,
  MissingBlob,
  RecordsUnreadable,
  readBlob,
  readEpisode,
} from "./read-episode.ts";
import { type DatasetImage, type ImageSource, parseDataUrl, renderLine } from "./render-line.ts";
import { collectSentFrames } from "./sent-frames.ts";
import { type CheckName, checkNames, type Problem, validateLine } from "./validate-line.ts";

export type ExportSelection = {
  /** Episode ids to export; undefined = every episode of the data directory. */
  episodes?: string[];
  clients?: string[];
  models?: string[];
  /** Inclusive bounds on the episode's creation time. */
  since?: Date;
  until?: Date;
  includeFailed: boolean;
  includeInterrupted: boolean;
};

export type ExportOptions = {
  dataDir: string;
  outDir: string;
  selection: ExportSelection;
  inlineImages: boolean;
  /** Secret values the dataset must not contain (upstream API key, control password). */
  secrets: (string | undefined)[];
  codecs: Codecs;
  version: string;
};

/** Why something was left out: by the selection, or because its records cannot give a valid line. */
export type SkipKind = "not_found" | "filtered" | "not_successful" | "interrupted" | "corrupt" | "invalid";
export type Skipped = { episode: string; exchanges?: string[]; kind: SkipKind; reason: string };

type ConversationEntry = {
  line: number;
  exchanges: string[];
  messages: number;
  tool_calls: number;
  images: string[];
  context_reduced: boolean;
  continues_reduced_history_of: string | null;
  /**
   * The line's tool calls that never ran (an operator rejected them, nobody decided in
   * time, the episode closed or restarted while they waited, or over a rate limit):
   * negative examples. The model saw the refusal as the call's tool result.
   */
  negative_calls: NegativeCall[];
};

type NegativeCall = {
  call_id: string;
  tool: string;
  status: "rejected" | "rate_limited";
  by: string;
  reason: string;
};

/** The calls of a line's assistant messages that the ledger held and never ran, in line order. */
function negativeCalls(conversation: Conversation, episode: EpisodeRecordsRead): NegativeCall[] {
  const calls = [...conversation.request.messages, conversation.answer].flatMap((message) => {
    const toolCalls = (message as { role?: unknown; tool_calls?: unknown }).tool_calls;
    return Array.isArray(toolCalls) ? (toolCalls as { id?: unknown; function?: { name?: unknown } }[]) : [];
  });
  return calls.flatMap((call) => {
    const held = typeof call.id === "string" ? episode.heldCalls.get(call.id) : undefined;
    return held === undefined
      ? []
      : [{ call_id: String(call.id), tool: String(call.function?.name ?? ""), ...held }];
  });
}

type EpisodeEntry = {
  id: string;
  client: string | null;
  model: string;
  created_at: string;
  state: string;
  successful_finish: boolean;
  restored: boolean;
  notes: string[];
  conversations: ConversationEntry[];
};

export type ExportResult = {
  manifest: Record<string, unknown>;
  /** Something selected could not be exported whole (corrupt records or a line that failed validation). */
  incomplete: boolean;
};

export class ExportRefused extends Error {}

function successfulFinish(episode: EpisodeRecordsRead): boolean {
  const result = episode.stored.result as { submitted?: unknown } | undefined;
  return episode.state === "finished" && result?.submitted === true && !episode.stored.failure;
}

/** Running when last described, or restored after a restart: the process did not see it to its end. */
function interrupted(episode: EpisodeRecordsRead): boolean {
  return episode.state === "running" || episode.state === "interrupted";
}

function selectionSkip(episode: EpisodeRecordsRead, selection: ExportSelection): Skipped | undefined {
  const { stored } = episode;
  const skip = (kind: SkipKind, reason: string): Skipped => ({ episode: episode.id, kind, reason });
  if (selection.clients && !selection.clients.includes(stored.client ?? ""))
    return skip(
      "filtered",
      `client ${stored.client ?? "unknown"} is not among ${selection.clients.join(", ")}`,
    );
  if (selection.models && !selection.models.includes(stored.model))
    return skip("filtered", `model ${stored.model} is not among ${selection.models.join(", ")}`);
  const created = Date.parse(stored.created_at);
  if (selection.since && !(created >= selection.since.getTime()))
    return skip("filtered", `created ${stored.created_at}, before ${selection.since.toISOString()}`);
  if (selection.until && !(created <= selection.until.getTime()))
    return skip("filtered", `created ${stored.created_at}, after ${selection.until.toISOString()}`);
  if (interrupted(episode) && !selection.includeInterrupted)
    return skip(
      "interrupted",
      `the sidecar stopped while the episode was ${episode.state === "running" ? "running" : "running (restored as interrupted)"}; --include-interrupted exports its delivered exchanges`,
    );
  if (!interrupted(episode) && !successfulFinish(episode) && !selection.includeFailed)
    return skip(
      "not_successful",
      `state ${episode.state}${stored.failure ? ` (${stored.failure.reason})` : ""}, no submitted finish receipt; --include-failed exports it`,
    );
  return undefined;
}

function imageSource(dataDir: string): ImageSource {
  return (url) => {
    if (isBlobRef(url)) {
      const bytes = readBlob(dataDir, url);
      return { mediaType: url.media_type ?? "application/octet-stream", bytes };
    }
    const image = typeof url === "string" ? parseDataUrl(url) : undefined;
    if (!image)
      throw new Error(
        `an image that is neither a data URL nor a blob reference: ${String(url).slice(0, 60)}`,
      );
    return image;
  };
}

function countToolCalls(messages: Record<string, unknown>[]): number {
  return messages.reduce((n, m) => n + (Array.isArray(m.tool_calls) ? m.tool_calls.length : 0), 0);
}

export async function exportDataset(options: ExportOptions): Promise<ExportResult> {
  const outDir = resolve(options.outDir);
  if (existsSync(outDir) && readdirSync(outDir).length > 0)
    throw new ExportRefused(`${options.outDir} exists and is not empty; export into a new directory`);
  if (!existsSync(join(options.dataDir, "episodes")))
    throw new ExportRefused(`${options.dataDir} has no episodes/ directory: not a data directory`);

  const findSecrets = createSecretFinder(options.secrets);
  const source = imageSource(options.dataDir);
  const readClientBlob = (ref: { $blob: string }) => readBlob(options.dataDir, ref as never);
  const known = listEpisodeIds(options.dataDir);
  const requested = options.selection.episodes ? [...new Set(options.selection.episodes)].sort() : known;

  const skipped: Skipped[] = [];
  const episodes: EpisodeEntry[] = [];
  const lines: string[] = [];
  const images = new Map<string, DatasetImage>();
  const checkFailures = new Map<CheckName, number>(checkNames.map((name) => [name, 0]));
  let checked = 0;

  for (const id of requested) {
    if (!known.includes(id)) {
      skipped.push({ episode: id, kind: "not_found", reason: `no episode ${id} in ${options.dataDir}` });
      continue;
    }
    let episode: EpisodeRecordsRead;
    try {
      episode = readEpisode(options.dataDir, id);
    } catch (error) {
      if (!(error instanceof RecordsUnreadable)) throw error;
      skipped.push({ episode: id, kind: "corrupt", reason: error.message });
      continue;
    }
    const excluded = selectionSkip(episode, options.selection);
    if (excluded) {
      skipped.push(excluded);
      continue;
    }
    const notes: string[] = [];
    if (episode.torn) {
      const torn = `${episode.torn.file} ends in a torn line (${episode.torn.chars} characters: a write cut short)`;
      if (!interrupted(episode)) {
        skipped.push({
          episode: id,
          kind: "corrupt",
          reason: `${torn}; a cleanly closed episode's records must be whole`,
        });
        continue;
      }
      notes.push(`${torn}; only exchanges recorded whole before it are used`);
    }
    const built = buildConversations(episode.exchanges);
    if (built.unusable.length > 0) {
      skipped.push({ episode: id, kind: "corrupt", reason: built.unusable.join("; ") });
      continue;
    }
    const entry: EpisodeEntry = {
      id,
      client: episode.stored.client,
      model: episode.stored.model,
      created_at: episode.stored.created_at,
      state: episode.state,
      successful_finish: successfulFinish(episode),
      restored: episode.restarts.length > 0,
      notes,
      conversations: [],
    };
    for (const conversation of built.conversations) {
      checked += 1;
      const outcome = exportConversation(conversation, episode, {
        source,
        readClientBlob,
        options,
        findSecrets,
      });
      if ("skip" in outcome) {
        skipped.push({ episode: id, exchanges: conversation.exchanges, ...outcome.skip });
        for (const problem of outcome.problems)
          checkFailures.set(problem.check, (checkFailures.get(problem.check) ?? 0) + 1);
        continue;
      }
      lines.push(outcome.text);
      for (const image of outcome.images) images.set(image.file, image);
      entry.conversations.push({
        line: lines.length,
        exchanges: conversation.exchanges,
        messages: outcome.messages,
        tool_calls: outcome.toolCalls,
        images: outcome.images.map((i) => i.file),
        context_reduced: conversation.contextReduced,
        continues_reduced_history_of: conversation.continuesReducedHistoryOf ?? null,
        negative_calls: negativeCalls(conversation, episode),
      });
    }
    if (entry.conversations.length > 0) episodes.push(entry);
  }

  const temporary = join(dirname(outDir), `.${basename(outDir)}.partial-${process.pid}`);
  const files = writeDataset(temporary, lines, options.inlineImages ? new Map() : images);
  const failedConversations = new Set(
    skipped.filter((s) => s.kind === "invalid").map((s) => `${s.episode}/${s.exchanges?.join(",")}`),
  ).size;
  const manifest = {
    format: "openai-chat-fine-tuning-jsonl",
    format_version: 1,
    sidecar_version: options.version,
    images: options.inlineImages ? "inline data URLs" : "files under images/, referenced by relative path",
    selection: {
      episodes: options.selection.episodes ? requested : "all",
      clients: options.selection.clients ?? "all",
      models: options.selection.models ?? "all",
      since: options.selection.since?.toISOString() ?? null,
      until: options.selection.until?.toISOString() ?? null,
      include_failed: options.selection.includeFailed,
      include_interrupted: options.selection.includeInterrupted,
    },
    counts: {
      episodes_considered: requested.length,
      episodes_exported: episodes.length,
      conversations: lines.length,
      conversations_skipped: skipped.filter((s) => s.exchanges).length,
      messages: episodes.flatMap((e) => e.conversations).reduce((n, c) => n + c.messages, 0),
      tool_calls: episodes.flatMap((e) => e.conversations).reduce((n, c) => n + c.tool_calls, 0),
      negative_calls: episodes
        .flatMap((e) => e.conversations)
        .reduce((n, c) => n + c.negative_calls.length, 0),
      images: images.size,
    },
    validation: {
      passed: failedConversations === 0,
      conversations_checked: checked,
      checks: checkNames.map((name) => ({ name, failed: checkFailures.get(name) ?? 0 })),
    },
    files,
    episodes,
    skipped,
  };
  writeFileSync(join(temporary, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  if (existsSync(outDir)) rmSync(outDir, { recursive: true });
  renameSync(temporary, outDir);
  return { manifest, incomplete: skipped.some((s) => s.kind === "corrupt" || s.kind === "invalid") };
}

type ConversationOutcome =
  | { text: string; images: DatasetImage[]; messages: number; toolCalls: number }
  | { skip: { kind: SkipKind; reason: string }; problems: Problem[] };

function exportConversation(
  conversation: Conversation,
  episode: EpisodeRecordsRead,
  deps: {
    source: ImageSource;
    readClientBlob: (ref: { $blob: string }) => Uint8Array;
    options: ExportOptions;
    findSecrets: ReturnType<typeof createSecretFinder>;
  },
): ConversationOutcome {
  const tail = conversation.exchanges.at(-1);
  let rendered: ReturnType<typeof renderLine>;
  try {
    rendered = renderLine(conversation, deps.source, { inlineImages: deps.options.inlineImages });
  } catch (error) {
    const reason =
      error instanceof MissingBlob
        ? `${error.message} (an image of exchange ${tail}'s upstream request)`
        : `exchange ${tail}: ${errorMessage(error)}`;
    return { skip: { kind: "corrupt", reason }, problems: [] };
  }
  const text = JSON.stringify(rendered.line);
  const clientBody = episode.exchanges.find((e) => e.id === tail)?.stages.client_request?.body;
  const problems = validateLine({
    lineText: text,
    files: new Map(rendered.images.map((i) => [i.file, i.bytes])),
    request: conversation.request,
    source: deps.source,
    frames: collectSentFrames(clientBody, deps.readClientBlob, deps.options.codecs),
    codecs: deps.options.codecs,
    findSecrets: deps.findSecrets,
  });
  if (problems.length > 0)
    return {
      skip: { kind: "invalid", reason: problems.map((p) => `${p.check}: ${p.problem}`).join("; ") },
      problems,
    };
  return {
    text,
    images: rendered.images,
    messages: rendered.line.messages.length,
    toolCalls: countToolCalls(rendered.line.messages),
  };
}

/** Writes the lines and images into `temporary` and returns each file's digest as read back from disk. */
function writeDataset(
  temporary: string,
  lines: string[],
  images: Map<string, DatasetImage>,
): Record<string, { sha256: string; bytes: number }> {
  rmSync(temporary, { recursive: true, force: true });
  mkdirSync(join(temporary, "images"), { recursive: true });
  writeFileSync(join(temporary, "dataset.jsonl"), lines.map((l) => `${l}\n`).join(""));
  for (const image of images.values()) writeFileSync(join(temporary, image.file), image.bytes);
  const names = ["dataset.jsonl", ...[...images.keys()].sort()];
  return Object.fromEntries(
    names.map((name) => {
      const bytes = readFileSync(join(temporary, name));
      return [name, { sha256: createHash("sha256").update(bytes).digest("hex"), bytes: bytes.length }];
    }),
  );
}
