/**
 * All episodes of this sidecar: creation (credentials, records directory),
 * lookup by id with path-safe ids, and the URLs a launcher needs. Episodes
 * restored after a restart are adopted read-only; once shutdown begins the store
 * stops accepting (no new episodes, no new model exchanges).
 */
import { join } from "node:path";
import type { Config } from "../config/schema.ts";
import { longestToolCallMs } from "../config/tool-call-wait.ts";
import { createExecutorFactory, type ExecutorFactory } from "../executor/create-executor.ts";
import { SidecarError } from "../lib/errors.ts";
import { episodeIdPattern, type Ids } from "../lib/ids.ts";
import type { Logger } from "../lib/logger.ts";
import type { Manifest } from "../manifest/manifest-schema.ts";
import { asksForApproval } from "../manifest/tool-policy.ts";
import type { ModelCapabilities } from "../models/model-capabilities.ts";
import { createModelCatalog } from "../models/model-catalog.ts";
import { observeRecords } from "../observe/observe-records.ts";
import { noObserver, type Observer } from "../observe/observer.ts";
import type { BlobStore } from "../records/blob-store.ts";
import { createEpisodeRecords } from "../records/episode-records.ts";
import { createGroupCommit } from "../records/group-commit.ts";
import { createRecurringTexts } from "../records/text-references.ts";
import { createEpisode, type Episode } from "./episode.ts";
import type { EpisodeOptions } from "./episode-options.ts";
import type { EpisodeStatus } from "./episode-status.ts";

export type EpisodeStoreDeps = {
  config: Config;
  dataDir: string;
  defaultManifest: Manifest;
  ids: Ids;
  clock: () => number;
  redact: (line: string) => string;
  /** The data directory's blob store (images of record lines), shared by all episodes. */
  blobs: BlobStore;
  /** Called with each new credential so logs and records redact it. */
  registerSecret: (secret: string) => void;
  /** Public base URL of this sidecar, e.g. http://127.0.0.1:8787 */
  baseUrl: () => string;
  /** Warnings about an episode's client (client-identity.ts). */
  logger?: Logger;
  /** Sees every record write (metrics, traces); none when absent. */
  observer?: Observer;
  /** The executor of each new episode (default: from `config.executor`). */
  createExecutor?: ExecutorFactory;
  /** An episode runs no more model exchanges (e.g. the image cache lets go of its frames). */
  episodeEnded?: (id: string) => void;
};

/** Where a client finds the episode, one base URL per protocol and the MCP endpoint. */
export type EpisodeUrls = { responses: string; gemini: string; anthropic: string; mcp: string };

export function episodeUrls(baseUrl: string, id: string): EpisodeUrls {
  const root = `${baseUrl}/e/${id}`;
  return {
    /** OpenAI Responses base URL (OpenCode baseURL, Codex base_url): POST {this}/responses */
    responses: `${root}/v1`,
    /** GOOGLE_GEMINI_BASE_URL: POST {this}/v1beta/models/{model}:streamGenerateContent */
    gemini: `${root}/gemini`,
    /** ANTHROPIC_BASE_URL: POST {this}/v1/messages */
    anthropic: `${root}/anthropic`,
    mcp: `${root}/mcp`,
  };
}

/** What a launcher needs to point a client at an episode (credentials included), and what its model can do. */
export type LaunchInfo = EpisodeStatus & {
  model_capabilities?: ModelCapabilities;
  urls: EpisodeUrls;
  ingress_key: string;
  mcp_token: string;
  tool_call_timeout_ms: number;
};

/** The episodes of this process: created, restored (adopted), found by id, refused once shutdown began. */
export interface EpisodeStore {
  /** Throws SidecarError `unavailable` once shutdown began. */
  create(options: EpisodeOptions): Episode;
  /** Throws SidecarError `not_found`. */
  get(id: string): Episode;
  /** Adds an episode restored from its records (src/lifecycle/restore-episodes.ts). */
  adopt(episode: Episode): void;
  /** Shutdown began: from now on new episodes and new model exchanges are refused (503 `unavailable`). */
  stopAccepting(reason?: string): void;
  /** Why new work is refused (shutdown), or undefined while accepting. */
  closingReason(): string | undefined;
  list(): Episode[];
  launchInfo(episode: Episode): LaunchInfo;
  baseUrl(): string;
}

export function createEpisodeStore(deps: EpisodeStoreDeps): EpisodeStore {
  const episodes = new Map<string, Episode>();
  let closing: string | undefined;
  const createExecutor =
    deps.createExecutor ?? createExecutorFactory(deps.config.executor, { clock: deps.clock });
  // One scheduler for the process, so episodes writing at once share each round of fdatasync.
  const groupCommit = deps.config.records.fsync ? createGroupCommit() : undefined;
  // Likewise one memory of long strings: episodes of one client kind send the same system prompt and tools.
  const texts = createRecurringTexts(deps.blobs, { redact: deps.redact });
  const models = createModelCatalog(deps.config.upstream.models);

  function create(options: EpisodeOptions): Episode {
    if (closing !== undefined) throw new SidecarError("unavailable", closing);
    // An episode's model is a known or declared one before any credential or record exists.
    const model = models.resolve(options.model ?? deps.config.upstream.model);
    if (!model.ok) throw new SidecarError("invalid_request", `model: ${model.problem}`, { param: "model" });
    let id = deps.ids.episodeId();
    while (episodes.has(id)) id = deps.ids.episodeId();
    const ingressKey = deps.ids.token("ura_key");
    const mcpToken = deps.ids.token("ura_mcp");
    deps.registerSecret(ingressKey);
    deps.registerSecret(mcpToken);
    const observer = deps.observer ?? noObserver;
    const records = observeRecords(
      createEpisodeRecords({
        dir: join(deps.dataDir, "episodes", id),
        clock: deps.clock,
        redact: deps.redact,
        groupCommit,
        blobs: deps.blobs,
        texts,
        written: (file, bytes) => observer.observe({ kind: "records_written", episode: id, file, bytes }),
      }),
      id,
      observer,
      deps.clock,
    );
    const episode = createEpisode({
      id,
      createdAt: new Date(deps.clock()).toISOString(),
      model: model.id,
      manifest: options.manifest ?? deps.defaultManifest,
      maxTurns: options.max_turns,
      context: options.context ?? deps.config.context,
      client: options.client,
      requirePinnedClient: options.require_pinned_client,
      mcpRequired: deps.config.mcp_required,
      warn: deps.logger?.warn,
      ingressKey,
      mcpToken,
      records,
      delivery: deps.config.delivery,
      approvalTimeoutMs: deps.config.approval_timeout_ms,
      ...(options.deadline_ms === undefined ? {} : { deadlineMs: options.deadline_ms }),
      executor: createExecutor(id),
      drainDeadlineMs: deps.config.shutdown.drain_deadline_ms,
      clock: deps.clock,
      ended: () => deps.episodeEnded?.(id),
    });
    episodes.set(id, episode);
    episode.persist();
    return episode;
  }

  function get(id: string): Episode {
    if (!episodeIdPattern.test(id))
      throw new SidecarError("not_found", `no episode with id ${JSON.stringify(id.slice(0, 80))}`);
    const episode = episodes.get(id);
    if (!episode) throw new SidecarError("not_found", `no episode with id ${id}`);
    return episode;
  }

  function launchInfo(episode: Episode): LaunchInfo {
    const model = models.resolve(episode.model);
    return {
      ...episode.describe(),
      ...(model.ok ? { model_capabilities: model.capabilities } : {}),
      urls: episodeUrls(deps.baseUrl(), episode.id),
      ingress_key: episode.ingressKey,
      mcp_token: episode.mcpToken,
      tool_call_timeout_ms:
        longestToolCallMs(deps.config) +
        (asksForApproval(episode.manifest) ? deps.config.approval_timeout_ms : 0),
      model_deadline_ms: deps.config.upstream.deadline_ms,
    };
  }

  function adopt(episode: Episode): void {
    if (episodes.has(episode.id))
      throw new SidecarError("internal", `episode ${episode.id} is already loaded`);
    episodes.set(episode.id, episode);
  }

  function stopAccepting(reason = "the sidecar is shutting down; no new work is accepted"): void {
    closing ??= reason;
  }

  return {
    create,
    get,
    adopt,
    stopAccepting,
    closingReason: () => closing,
    list: () => [...episodes.values()],
    launchInfo,
    baseUrl: deps.baseUrl,
  };
}
