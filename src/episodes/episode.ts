/**
 * One episode: the unit of isolation. Its own credentials, ledger, counters,
 * records and result. Model exchanges and MCP callbacks of an
 * episode only ever see this object.
 */

import type { z } from "zod";
import { manifestToolFor } from "../clients/tool-names.ts";
import { type ContextMemory, createContextMemory } from "../context/context-cut.ts";
import type { ContextPolicy } from "../context/policy-schema.ts";
import type { Executor } from "../executor/executor.ts";
import {
  createEpisodeLedger,
  type EpisodeLedger,
  type EpisodeLedgerOptions,
} from "../ledger/episode-ledger.ts";
import { credentialDigest } from "../lib/credentials.ts";
import { errorMessage } from "../lib/error-message.ts";
import { createFrozenMemos, type FrozenMemos } from "../lib/frozen-memos.ts";
import type { Manifest } from "../manifest/manifest-schema.ts";
import { compileToolPolicy } from "../manifest/tool-policy.ts";
import { addExchangeCost, type EpisodeCost, type ExchangeCost } from "../pricing/exchange-cost.ts";
import type { EpisodeRecords } from "../records/episode-records.ts";
import { createClientIdentity, type McpRequirement } from "./client-identity.ts";
import type { ClientKind } from "./episode-options.ts";
import type {
  EpisodeCounters,
  EpisodeMcp,
  EpisodeStatus,
  episodeStateSchema,
  failureReasonSchema,
} from "./episode-status.ts";
import { createJobStopper } from "./job-stopper.ts";

export type EpisodeState = z.infer<typeof episodeStateSchema>;
export type FailureReason = z.infer<typeof failureReasonSchema>;
export type { EpisodeCounters };

export type EpisodeInit = {
  id: string;
  createdAt: string;
  model: string;
  manifest: Manifest;
  maxTurns: number;
  context: ContextPolicy;
  client: ClientKind | undefined;
  /** Refuse model requests from a client other than the pinned version (client-identity.ts). */
  requirePinnedClient?: boolean;
  /** What a model request gets while the client's MCP side never connected (default warn). */
  mcpRequired?: McpRequirement;
  warn?: (message: string, fields: Record<string, unknown>) => void;
  ingressKey: string;
  mcpToken: string;
  records: EpisodeRecords;
  delivery: { wait_ms: number; previous_ack_wait_ms: number };
  /** How long a call whose tool asks for approval waits for an operator (config approval_timeout_ms). */
  approvalTimeoutMs?: number;
  /** The episode fails (`deadline`) this long after creation while still running (episode option deadline_ms). */
  deadlineMs?: number;
  /** Runs this episode's admitted tool calls. */
  executor: Executor;
  /** How long cancelling waits for admitted calls to finish. */
  drainDeadlineMs: number;
  /** The episode runs no more model exchanges (failed, cancelled): what it kept for them can go. */
  ended?: () => void;
  clock: () => number;
  /** How the ledger is made (default: a new, open one); a restored episode rebuilds it from its journal. */
  createLedger?: (options: EpisodeLedgerOptions) => EpisodeLedger;
  /** Set when the episode was restored read-only after a restart (src/lifecycle/restore-episodes.ts). */
  restored?: RestoredEpisodeState;
};

/** What a restored episode starts from: its last description and the restart report. */
export type RestoredEpisodeState = {
  state: EpisodeState;
  failure: { reason: FailureReason; message: string } | undefined;
  result: unknown;
  counters: Partial<Record<keyof EpisodeCounters, number>>;
  /** The cost summed before the restart, if any. */
  cost?: EpisodeCost;
  /** Exchanges already numbered before the restart. */
  exchangeSeq: number;
  /** Why no model exchange is run any more. */
  closedReason: string;
  /** Shown as `restart` in the description: uncertain calls, torn tails, frozen marker … */
  report: Record<string, unknown>;
};

/**
 * An episode as the routes, the MCP server, the control API and shutdown see it:
 * what it is (its id, model, manifest, credentials, records), its state, and verbs,
 * each of which decides how soon episode.json is rewritten.
 */
export interface Episode {
  readonly id: string;
  readonly createdAt: string;
  /** The upstream model (the episode's, not the client's). */
  readonly model: string;
  readonly manifest: Manifest;
  /** 0 = unlimited. */
  readonly maxTurns: number;
  readonly context: ContextPolicy;
  readonly client: ClientKind | undefined;
  readonly ingressKey: string;
  readonly mcpToken: string;
  readonly records: EpisodeRecords;
  readonly executor: Executor;
  readonly ledger: EpisodeLedger;
  /** The context policy's previous reduction, so the next turn keeps the prompt's prefix. */
  readonly contextMemory: ContextMemory;
  /** What its stages derived from the frozen values its requests repeat (frozen-memos.ts). */
  readonly memos: FrozenMemos;
  readonly counters: Readonly<EpisodeCounters>;
  readonly mcp: Readonly<EpisodeMcp>;
  /** Aborted when the episode is cancelled: its upstream work stops. */
  readonly abortSignal: AbortSignal;
  readonly state: EpisodeState;
  readonly failure: { reason: FailureReason; message: string } | undefined;
  readonly result: unknown;

  nextExchangeId(): string;
  /** Adds a recorded exchange cost to the episode's (its status `cost`). */
  addCost(cost: ExchangeCost): void;
  /** The manifest tool behind a model-visible name (undefined: one of the client's own tools). */
  toolFor(modelName: string): string | undefined;
  /**
   * Keeps the arguments text of the model's calls: a client that echoes a call's
   * arguments back as an object (Gemini) gets Qwen's exact bytes sent upstream again.
   */
  rememberArguments(calls: readonly { id: string; arguments: string }[]): void;
  argumentsOf(callId: string): string | undefined;
  /**
   * Version pin and MCP-connected checks of a model request; throws (400) when it must
   * be refused. Returns the client's own session id on it, when it sent one.
   */
  checkModelRequest(headers: Headers): string | undefined;
  /** The client's own session id on a request, for its records (client-identity.ts). */
  clientSessionOf(headers: Headers): string | undefined;
  /** Whether model exchanges may still run; the reason when not. */
  closedReason(): string | undefined;
  /**
   * Takes one of max_turns for an exchange about to go upstream; false when every
   * turn is delivered or held by an exchange in flight. Each taken turn is given
   * back when the exchange ends (exchangeDelivered, exchangeRevoked, exchangeFailed).
   */
  reserveTurn(): boolean;
  fail(reason: FailureReason, message: string): void;
  /** A submitted finish ends the episode's robot work (admission closes). */
  finish(receipt: unknown): void;
  /**
   * Cancel: close admission, abort upstream work, wait (bounded) for admitted callbacks;
   * the calls that did not finish. `deadline`: the episode's deadline_ms passed.
   */
  cancel(
    message?: string,
    drainTimeoutMs?: number,
    reason?: "cancelled" | "deadline",
  ): Promise<{ unfinished: string[] }>;
  /** Asks the executor to stop the jobs still in flight (shutdown drain overrun); nothing without the manifest's `stop`. */
  stopJobs(reason: "drain_overrun"): Promise<void>;
  /**
   * An MCP request of this episode's client began; call the returned function when its
   * answer ended. Undefined when the manifest asks for no stops (nothing watches the client).
   */
  mcpRequestOpened(): (() => void) | undefined;
  /** A model exchange reached the client: its turn counts against max_turns, its calls become claimable. */
  exchangeDelivered(batchId: string | undefined): void;
  /** The client went away before the last byte: the exchange's calls can never run. */
  exchangeRevoked(batchId: string | undefined): void;
  /** A model exchange failed; a provider failure also ends the episode's model work (at once on disk). */
  exchangeFailed(outcome: { heldTurn: boolean; providerError?: string }): void;
  /** A tool call passed the ledger and the schema check and goes to the executor. */
  toolCallAdmitted(): void;
  /** A tool call was refused and never executed. */
  toolCallRefused(): void;
  mcpSessionOpened(): void;
  mcpSessionClosed(): void;
  /** The client's MCP side completed initialize: the tools can reach the model. */
  mcpInitialized(userAgent: string | undefined): void;
  /** The client listed the tools (recorded once). */
  mcpToolsListed(): void;
  /** An answer given without a model exchange (no turn, e.g. a local countTokens 400): counted and recorded. */
  auxiliaryResponse(entry: Record<string, unknown>): void;
  /** Tracks a running handler so shutdown can wait for it. */
  track<T>(work: Promise<T>): Promise<T>;
  /** Handlers tracked and still running. */
  handlersInFlight(): number;
  /** Resolves once no tracked handler is running (one that starts another is waited for too). */
  handlersSettled(): Promise<void>;
  /**
   * A delivery is being written; `revoke` revokes it if it never settles (shutdown).
   * Call the returned function once it settled.
   */
  deliveryOpened(revoke: (reason: string) => void): () => void;
  /** Revokes every delivery still being written (shutdown, after the drain). */
  revokeDeliveries(reason: string): void;
  abort(reason: Error): void;
  describe(): EpisodeStatus;
  /** Rewrites episode.json at once (state changes). */
  persist(): void;
  /** Rewrites episode.json within a quarter second, once for any number of calls (counters). */
  persistSoon(): void;
}

export function createEpisode(init: EpisodeInit): Episode {
  const abort = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  const restored = init.restored;
  let exchangeSeq = restored?.exchangeSeq ?? 0;
  const counters: EpisodeCounters = {
    delivered_exchanges: 0,
    failed_exchanges: 0,
    revoked_exchanges: 0,
    auxiliary_responses: 0,
    tool_calls_admitted: 0,
    tool_calls_refused: 0,
    ...restored?.counters,
  };
  /** What the MCP server saw: a CLI given a bad token silently runs without the tools (docs/clients.md). */
  const mcp: EpisodeMcp = {
    initialized: false,
    tools_listed: false,
    user_agent: undefined,
    sessions_opened: 0,
    sessions_closed: 0,
  };
  let state: EpisodeState = restored?.state ?? "running";
  let failure: { reason: FailureReason; message: string } | undefined = restored?.failure;
  let result: unknown = restored?.result;
  let cost: EpisodeCost | undefined = restored?.cost;

  const ledger = (init.createLedger ?? createEpisodeLedger)({
    journal: {
      append: (event) => init.records.ledger(event),
      sync: () => init.records.sync(),
    },
    clock: init.clock,
    deliveryWaitMs: init.delivery.wait_ms,
    previousAckWaitMs: init.delivery.previous_ack_wait_ms,
    finishTool: init.manifest.finish_tool,
    // A restored episode runs nothing: its manifest's policy is never consulted.
    ...(restored ? {} : { policy: compileToolPolicy(init.manifest) }),
    ...(init.approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs: init.approvalTimeoutMs }),
  });
  const clientIdentity = createClientIdentity({
    episodeId: init.id,
    expected: init.client,
    requirePinned: init.requirePinnedClient ?? false,
    mcpRequired: init.mcpRequired ?? "warn",
    warn: init.warn,
  });
  const toolNames = init.manifest.tools.map((t) => t.name);
  const restoreInfo = restored
    ? undefined
    : {
        ingress_key_sha256: credentialDigest(init.ingressKey),
        mcp_token_sha256: credentialDigest(init.mcpToken),
        manifest: init.manifest,
      };

  /** Exchanges holding one of max_turns: counted before they go upstream, so concurrent requests cannot overrun the cap. */
  let turnsInFlight = 0;
  /** Asks the executor to stop jobs nobody wants any more (the manifest's `stop`; a restored episode runs nothing). */
  const stopper = createJobStopper({
    episodeId: init.id,
    ledger,
    executor: init.executor,
    policy: restored ? undefined : init.manifest.stop,
    clock: init.clock,
    exchangesInFlight: () => turnsInFlight,
    ...(init.warn ? { warn: init.warn } : {}),
  });
  const deadlineTimer =
    init.deadlineMs === undefined || restored
      ? undefined
      : setTimeout(() => {
          if (state === "running")
            void episode.cancel(
              `the episode's deadline (${init.deadlineMs} ms) passed`,
              undefined,
              "deadline",
            );
        }, init.deadlineMs);
  deadlineTimer?.unref();
  /** The exact arguments text of each tool call the model made, by call id. */
  const modelArguments = new Map<string, string>();
  let persistTimer: ReturnType<typeof setTimeout> | undefined;
  const deliveries = new Set<(reason: string) => void>();
  const releaseTurn = () => {
    turnsInFlight = Math.max(0, turnsInFlight - 1);
    stopper.clientSeen();
  };
  /**
   * A model exchange's answer reached the client or not: its turn is released, its batch
   * settled in the ledger and counted; the episode is written soon even when the ledger throws.
   */
  const settleExchange = (outcome: "delivered" | "revoked", batchId: string | undefined) => {
    releaseTurn();
    try {
      if (batchId && outcome === "delivered") ledger.delivered(batchId);
      else if (batchId) ledger.revoke(batchId);
      counters[`${outcome}_exchanges` as const] += 1;
    } finally {
      episode.persistSoon();
    }
  };
  const episode: Episode = {
    id: init.id,
    createdAt: init.createdAt,
    model: init.model,
    manifest: init.manifest,
    maxTurns: init.maxTurns,
    context: init.context,
    client: init.client,
    ingressKey: init.ingressKey,
    mcpToken: init.mcpToken,
    records: init.records,
    executor: init.executor,
    ledger,
    contextMemory: createContextMemory(),
    memos: createFrozenMemos(),
    counters,
    mcp,
    abortSignal: abort.signal,
    get state() {
      return state;
    },
    get failure() {
      return failure;
    },
    get result() {
      return result;
    },
    addCost(exchangeCost) {
      cost = addExchangeCost(cost, exchangeCost);
      episode.persistSoon();
    },
    nextExchangeId() {
      exchangeSeq += 1;
      return `ex_${String(exchangeSeq).padStart(4, "0")}`;
    },
    toolFor(modelName) {
      return manifestToolFor(modelName, init.manifest.server, toolNames);
    },
    rememberArguments(calls) {
      for (const call of calls) modelArguments.set(call.id, call.arguments);
    },
    argumentsOf(callId: string): string | undefined {
      return modelArguments.get(callId);
    },
    checkModelRequest(headers) {
      stopper.clientSeen();
      return clientIdentity.checkModelRequest(headers, mcp);
    },
    clientSessionOf(headers) {
      return clientIdentity.sessionIdOf(headers);
    },
    closedReason() {
      if (restored) return restored.closedReason;
      if (state === "failed" || state === "interrupted") {
        return `episode ${init.id} is ${state}${failure ? ` (${failure.reason}: ${failure.message})` : ""}; no further model exchanges are run`;
      }
      if (abort.signal.aborted) return `episode ${init.id} was cancelled; no further model exchanges are run`;
      if (init.maxTurns > 0 && counters.delivered_exchanges >= init.maxTurns) {
        return `episode ${init.id} reached max_turns (${init.maxTurns}); no further model exchanges are run`;
      }
      return undefined;
    },
    reserveTurn() {
      if (init.maxTurns > 0 && counters.delivered_exchanges + turnsInFlight >= init.maxTurns) return false;
      turnsInFlight += 1;
      return true;
    },
    fail(reason: FailureReason, message: string): void {
      if (state === "failed" || state === "interrupted") return;
      state = reason === "interrupted" ? "interrupted" : "failed";
      failure = { reason, message };
      clearTimeout(deadlineTimer);
      ledger.close();
      episode.persist();
      init.ended?.();
    },
    /**
     * A submitted finish ends the episode's robot work: admission closes, so later
     * calls of the finish batch and tool calls of later exchanges never run. Model
     * exchanges without robot calls (the client's closing text answer) still run.
     */
    finish(receipt: unknown): void {
      if (state !== "running") return;
      state = "finished";
      result = receipt;
      clearTimeout(deadlineTimer);
      ledger.close(`the episode finished: its ${init.manifest.finish_tool} receipt was submitted`);
      episode.persist();
    },
    /**
     * Cancel: close admission, abort upstream work, wait (bounded) for admitted
     * callbacks. Reports the calls that did not finish; physical work already
     * running is asked to stop only with the manifest's `stop` (job-stopper.ts).
     * A finished episode keeps its state and result. `deadline`: the episode's
     * deadline_ms passed (the same, failed as `deadline`).
     */
    async cancel(
      message = "cancelled by the control API",
      drainTimeoutMs = init.drainDeadlineMs,
      reason: "cancelled" | "deadline" = "cancelled",
    ) {
      // A finished episode stays finished: cancelling it only closes it for further work.
      if (state === "finished") {
        ledger.close(message);
        init.ended?.();
      } else episode.fail(reason, message);
      abort.abort(new Error(message));
      // With the manifest's `stop`, the jobs in flight are asked to stop while the drain waits for their ends.
      const stopping = stopper.stopJobs(reason);
      // A restored episode runs nothing here: its unfinished calls are the uncertain ones of an earlier process.
      const drained = restored
        ? { unfinished: [...ledger.summary().uncertain] }
        : await ledger.drain({ timeoutMs: drainTimeoutMs });
      await stopping;
      episode.persist();
      return drained;
    },
    /** Asks the executor to stop the jobs still in flight (shutdown drain overrun); nothing without the manifest's `stop`. */
    stopJobs: (reason: "drain_overrun") => stopper.stopJobs(reason),
    /**
     * An MCP request of this episode's client began; call the returned function when its
     * answer ended. Undefined when the manifest asks for no stops (nothing watches the client).
     */
    mcpRequestOpened: (): (() => void) | undefined =>
      stopper.enabled ? stopper.mcpRequestOpened() : undefined,
    /** A model exchange reached the client: its turn counts against max_turns, its calls become claimable. */
    exchangeDelivered: (batchId: string | undefined): void => settleExchange("delivered", batchId),
    /** The client went away before the last byte: the exchange's calls can never run. */
    exchangeRevoked: (batchId: string | undefined): void => settleExchange("revoked", batchId),
    /** A model exchange failed; a provider failure also ends the episode's model work (at once on disk). */
    exchangeFailed(outcome: { heldTurn: boolean; providerError?: string }): void {
      if (outcome.heldTurn) releaseTurn();
      counters.failed_exchanges += 1;
      if (outcome.providerError !== undefined) episode.fail("provider_error", outcome.providerError);
      episode.persistSoon();
    },
    /**
     * A tool call passed the ledger and the schema check and goes to the executor.
     * Only a counter: the claim itself is in the ledger's journal, fdatasync'ed before
     * the executor sees it, and a restart restores calls from that journal, so the
     * description is rewritten with the other counters, off the call's path.
     */
    toolCallAdmitted(): void {
      counters.tool_calls_admitted += 1;
      episode.persistSoon();
    },
    /** A tool call was refused and never executed (journaled by the ledger; the counter as above). */
    toolCallRefused(): void {
      counters.tool_calls_refused += 1;
      episode.persistSoon();
    },
    /** An MCP session began or ended (written with the next persist: sessions come and go often). */
    mcpSessionOpened(): void {
      mcp.sessions_opened += 1;
    },
    mcpSessionClosed(): void {
      mcp.sessions_closed += 1;
    },
    /** The client's MCP side completed initialize: the tools can reach the model. */
    mcpInitialized(userAgent: string | undefined): void {
      mcp.initialized = true;
      mcp.user_agent = userAgent;
      episode.persist();
    },
    /** The client listed the tools (recorded once). */
    mcpToolsListed(): void {
      if (mcp.tools_listed) return;
      mcp.tools_listed = true;
      episode.persist();
    },
    /** An answer given without a model exchange (no turn, e.g. a local countTokens 400): counted and recorded. */
    auxiliaryResponse(entry: Record<string, unknown>): void {
      counters.auxiliary_responses += 1;
      init.records.auxiliary(entry);
      episode.persist();
    },
    /** Tracks a running handler so shutdown can wait for it. */
    track<T>(work: Promise<T>): Promise<T> {
      inFlight.add(work);
      work.then(
        () => inFlight.delete(work),
        () => inFlight.delete(work),
      );
      return work;
    },
    handlersInFlight: () => inFlight.size,
    async handlersSettled() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
    deliveryOpened(revoke) {
      deliveries.add(revoke);
      return () => deliveries.delete(revoke);
    },
    revokeDeliveries(reason) {
      for (const revoke of [...deliveries]) revoke(reason);
    },
    abort: (reason: Error) => abort.abort(reason),
    describe(): EpisodeStatus {
      return {
        id: init.id,
        created_at: init.createdAt,
        state,
        failure: failure ?? null,
        result: result ?? null,
        model: init.model,
        client: init.client ?? null,
        max_turns: init.maxTurns,
        context_policy: init.context,
        manifest: { server: init.manifest.server, tools: toolNames, finish_tool: init.manifest.finish_tool },
        counters,
        mcp,
        client_identity: clientIdentity.describe(mcp),
        ledger: ledger.summary(),
        records_dir: init.records.dir,
        cost: cost ?? null,
        /** The first records write that failed (full disk …): exchanges and callbacks fail while it lasts. */
        records_failure: init.records.failure ?? null,
        ...(restored ? { restart: restored.report } : {}),
      };
    },
    /** Rewrites episode.json: the description plus what a restarted sidecar needs (credential digests, never the credentials). */
    persist(): void {
      if (init.records.frozen) return;
      try {
        init.records.describe({ ...episode.describe(), restore: restoreInfo });
      } catch (error) {
        // Never fatal (it runs from timers too): the failure is in records.failure and the status.
        init.warn?.("episode.json could not be written", {
          episode: init.id,
          message: errorMessage(error),
        });
      }
    },
    /**
     * Persists within a quarter second, once for any number of calls: counters change
     * on every exchange, and rewriting episode.json each time was the largest cost of
     * a text exchange. State changes (fail, finish, cancel, shutdown) persist at once.
     */
    persistSoon(): void {
      if (persistTimer !== undefined) return;
      persistTimer = setTimeout(() => {
        persistTimer = undefined;
        if (init.records.frozen) return;
        // Off the event loop: a synchronous rewrite stalled the exchanges in flight for milliseconds.
        init.records.describeInBackground({ ...episode.describe(), restore: restoreInfo }).catch((error) =>
          init.warn?.("episode.json could not be written", {
            episode: init.id,
            message: errorMessage(error),
          }),
        );
      }, 250);
      persistTimer.unref();
    },
  };
  return episode;
}
