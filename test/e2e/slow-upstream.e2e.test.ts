/**
 * The four real, pinned CLIs through the compiled binary against an upstream that
 * behaves like a loaded Model Studio (the scripted upstream's profiles, docs/upstream-profiles.md):
 *   1. the first model answer takes 150 s (10 s to the response head, then 140 s of
 *      stream): every client finishes the smoke episode, kept waiting by the sidecar's
 *      keepalives (src/exchange/keep-streaming-alive.ts); one upstream request per model
 *      turn, no client retry, every call claimed once;
 *   2. the upstream answers Model Studio's 429 insufficient_quota for the first 45 s: the
 *      sidecar's own retries wait it out, the episode finishes, no error reaches the client;
 *   3. a final upstream failure (an invalid key) after the response head went out: the
 *      client is told in its protocol's in-stream form and stops, one upstream exchange;
 *   4. the binary's own embedded model on the `loaded` profile (what `make run
 *      ARGS=--upstream-profile=loaded` shows a person): every client finishes.
 * The four clients run at once in each test (they mostly wait). "Every answer slow" runs
 * each client through a whole episode of 150 s answers (~10 min): only with
 * URA_E2E_EVERY_ANSWER_SLOW=1, outside CI's default set.
 * Everything runs in a loopback-only network namespace when one can be made.
 */
import { expect, test } from "bun:test";
import type { ClientName } from "../../src/clients/client-manifests.ts";
import type { UpstreamProfileChoice } from "../../src/config/upstream-profile.ts";
import { recordedCancel } from "../../src/records/upstream-cancel.ts";
import type { ReceivedRequest } from "../../src/scripted-upstream/create-scripted-upstream.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { checkSmokeEpisode, readSmokeRecords } from "../../src/validate/smoke-checks.ts";
import { readEpisodeRecords } from "../../src/validate/upstream-evidence.ts";
import { assertPrerequisites, runClient, type Upstream } from "../support/client-run.ts";
import { type Line, records } from "../support/episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { startSidecarProcess } from "../support/sidecar-process.ts";

const clients: ClientName[] = ["claude", "codex", "gemini", "opencode"];
const slowAnswer = { head_ms: 10_000, stream_ms: 140_000 };
const everyAnswerSlow = process.env.URA_E2E_EVERY_ANSWER_SLOW === "1";

/** The sidecar on its defaults: a 90 s idle timeout and a 10 min deadline fit a 150 s answer. */
const sidecarConfig = {};

type EpisodeRun = {
  client: ClientName;
  /** What the scripted upstream received (none listed for the binary's embedded model). */
  received: ReceivedRequest[];
  exchanges: Line[];
  status: Awaited<ReturnType<Awaited<ReturnType<typeof startSidecarProcess>>["episode"]>>;
  recordsDir: string;
  code: number;
  context: string;
};

const hasTools = (body: unknown) => ((body as { tools?: unknown[] } | null)?.tools?.length ?? 0) > 0;

/**
 * One client's smoke episode against its own scripted upstream playing `profile`;
 * `instantAfterFirstTurn` switches the upstream to instant once a model turn (a
 * request with tools) arrived, so only the first answer (and what came before it) is slow.
 */
async function runEpisode(
  client: ClientName,
  options: {
    profile: UpstreamProfileChoice;
    instantAfterFirstTurn?: boolean;
    prepare?: (upstream: Upstream) => void;
    timeoutMs: number;
  },
): Promise<EpisodeRun> {
  assertPrerequisites(client);
  const upstream = await serveScriptedUpstream(0, { profile: options.profile });
  options.prepare?.(upstream);
  const watch = options.instantAfterFirstTurn
    ? setInterval(() => {
        if (upstream.scripted.received.some((r) => hasTools(r.body))) {
          upstream.scripted.setProfile("instant");
          clearInterval(watch);
        }
      }, 100)
    : undefined;
  const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url, config: sidecarConfig });
  try {
    const episode = await sidecar.createEpisode({ client });
    const run = await runClient(client, sidecar, episode, { timeoutMs: options.timeoutMs });
    const status = await sidecar.episode(episode.id);
    return {
      client,
      received: upstream.scripted.received,
      exchanges: records(episode.records_dir, "exchanges"),
      status,
      recordsDir: episode.records_dir,
      code: run.code,
      context: run.context,
    };
  } finally {
    clearInterval(watch);
    await sidecar.stop();
    upstream.stop();
  }
}

/** The smoke episode's every check passed, each exchange delivered once, nothing retried by the client. */
function expectFinishedOnce(run: EpisodeRun, options: { clientMayCancelTitle?: boolean } = {}): void {
  const failed = checkSmokeEpisode(readSmokeRecords(run.recordsDir), run.status).filter((c) => !c.pass);
  expect(failed).toEqual([]);
  // OpenCode asks for a session title beside the model turns and, once the episode is done,
  // exits without waiting for it: a title still throttled then is cancelled by the client.
  // The cancellation is read from the line's structured `cancelled` member through the reader
  // every other reader uses, not from the wording of its message.
  const recorded = readEpisodeRecords(run.recordsDir).exchanges;
  const exchangeOf = (s: Line) => recorded.find((e) => e.id === s.exchange);
  const cancelledTitle = (s: Line) => {
    const exchange = exchangeOf(s);
    const answer = exchange?.line("upstream_response");
    return (
      options.clientMayCancelTitle === true &&
      run.client === "opencode" &&
      s.status === "failed" &&
      !hasTools(exchange?.line("client_request")?.body) &&
      answer?.cancelled !== undefined &&
      recordedCancel(answer)?.reason === "client_closed"
    );
  };
  const all = run.exchanges.filter((l) => l.stage === "status");
  const statuses = all.filter((l) => !cancelledTitle(l));
  expect(statuses.map((s) => s.status)).toEqual(statuses.map(() => "delivered"));
  expect(run.status.counters.failed_exchanges).toBe(all.length - statuses.length);
}

function summary(run: EpisodeRun): string {
  const attempts = run.exchanges
    .filter((l) => l.stage === "upstream_response")
    .map((l) => (l.attempts as unknown[]).length);
  const keptAlive = run.exchanges.filter((l) => l.stage === "delivered" && typeof l.keepalives === "number");
  return `${run.client}: exit ${run.code}, episode ${run.status.state}, ${run.received.length} upstream requests, attempts per exchange ${JSON.stringify(attempts)}, kept alive ${JSON.stringify(keptAlive.map((l) => l.keepalives))}`;
}

async function forEachClient(
  check: (client: ClientName) => Promise<EpisodeRun>,
  assert: (run: EpisodeRun) => void,
) {
  const runs = await Promise.all(clients.map(check));
  for (const run of runs) console.log(summary(run));
  if (process.env.URA_E2E_DEBUG)
    for (const run of runs)
      console.log(
        run.context,
        JSON.stringify(
          run.exchanges
            .filter((l) => l.stage === "status" || l.stage === "client_request")
            .map((l) => [
              l.stage,
              l.status,
              l.path,
              l.told_in_stream,
              (l.error as { message?: string } | undefined)?.message?.slice(0, 200),
            ]),
        ),
      );
  for (const run of runs) {
    try {
      assert(run);
    } catch (error) {
      console.error(run.context);
      throw error;
    }
  }
}

const slowTimeoutMs = 420_000;

describeInLoopbackNamespace(
  "Slow and throttling upstream, four real CLIs",
  { file: import.meta.path, timeoutMs: 4 * slowTimeoutMs + (everyAnswerSlow ? 1_600_000 : 0) },
  () => {
    test(
      "the first answer takes 150 s (10 s to the head, then 140 s of stream): every client finishes, one upstream request per turn, no client retry",
      () =>
        forEachClient(
          (client) =>
            runEpisode(client, {
              profile: slowAnswer,
              instantAfterFirstTurn: true,
              timeoutMs: slowTimeoutMs,
            }),
          (run) => {
            expectFinishedOnce(run);
            const modelTurns = run.received.filter((r) => hasTools(r.body));
            const delivered = run.exchanges.filter((l) => l.stage === "status").length;
            // Each upstream request belongs to one exchange: nothing was asked twice.
            expect(run.received.length).toBe(delivered);
            expect(modelTurns.every((r) => r.completed && !r.aborted)).toBe(true);
            const first = run.exchanges.find(
              (l) => l.stage === "delivered" && typeof l.keepalives === "number",
            );
            // The slow answer was kept alive: its head went out before the answer, keepalives every 10 s.
            expect(first?.keepalives as number).toBeGreaterThanOrEqual(14);
          },
        ),
      slowTimeoutMs + 60_000,
    );

    test(
      "the upstream answers 429 insufficient_quota for the first 45 s: every episode finishes, no error reached the client",
      () =>
        forEachClient(
          (client) =>
            runEpisode(client, {
              profile: { bursts: [{ kind: "allocation_quota", from_ms: 0, for_ms: 45_000 }] },
              timeoutMs: slowTimeoutMs,
            }),
          (run) => {
            expectFinishedOnce(run, { clientMayCancelTitle: true });
            const throttled = run.received.filter((r) => r.profile === "allocation_quota");
            expect(throttled.length).toBeGreaterThan(0);
            // The backoff schedule (docs/upstream-errors.md): each retry waits at least
            // upstream.retry.initial_backoff_ms (1 s), so no more attempts than that allows.
            for (const line of run.exchanges.filter((l) => l.stage === "upstream_response")) {
              const starts = (line.attempts as { started_at: string }[]).map((a) => Date.parse(a.started_at));
              for (let i = 1; i < starts.length; i++)
                expect((starts[i] as number) - (starts[i - 1] as number)).toBeGreaterThanOrEqual(990);
              expect(starts.length).toBeLessThanOrEqual(46);
            }
            // No error reached the client: none was told in-stream either.
            expect(run.exchanges.some((l) => l.told_in_stream === true)).toBe(false);
          },
        ),
      slowTimeoutMs + 60_000,
    );

    test(
      "an invalid key answered after the head went out: each client is told in-stream and stops, one upstream exchange",
      () =>
        forEachClient(
          (client) =>
            runEpisode(client, {
              profile: "instant",
              prepare: (upstream) =>
                upstream.scripted.enqueueFaults([
                  {
                    kind: "status",
                    status: 401,
                    delay_ms: 8_000,
                    tools_only: true,
                    body: JSON.stringify({
                      error: {
                        message: "Incorrect API key provided. ",
                        type: "invalid_request_error",
                        param: null,
                        code: "invalid_api_key",
                      },
                    }),
                  },
                ]),
              timeoutMs: 180_000,
            }),
          (run) => {
            expect(run.status.failure).toMatchObject({ reason: "provider_error" });
            const modelTurns = run.received.filter((r) => hasTools(r.body));
            expect(modelTurns).toHaveLength(1);
            const statuses = run.exchanges.filter((l) => l.stage === "status");
            const toldAt = statuses.findIndex((l) => l.told_in_stream === true);
            expect(statuses[toldAt]).toMatchObject({
              status: "failed",
              error: { kind: "upstream_rejected" },
            });
            // The client stopped: what it sent after the in-stream error was refused at once by the
            // ended episode (a final 400) and reached no upstream. Gemini CLI and Claude Code (its
            // non-streaming fallback off, as the kit sets it) send nothing more; Codex and
            // OpenCode one request (docs/clients.md).
            const later = statuses.slice(toldAt + 1);
            expect(later.length).toBeLessThanOrEqual(
              run.client === "codex" || run.client === "opencode" ? 1 : 0,
            );
            for (const line of later)
              expect(line).toMatchObject({
                status: "failed",
                error: { kind: "episode_closed", http_status: 400 },
              });
            expect(records(run.recordsDir, "ledger").filter((e) => e.type === "registered")).toEqual([]);
          },
        ),
      240_000,
    );

    test(
      "the binary's embedded model on the loaded profile (make run ARGS=--upstream-profile=loaded): every client finishes",
      () =>
        forEachClient(
          async (client) => {
            const sidecar = await startSidecarProcess({ args: ["--upstream-profile", "loaded"] });
            try {
              const episode = await sidecar.createEpisode({ client });
              const run = await runClient(client, sidecar, episode, { timeoutMs: slowTimeoutMs });
              const status = await sidecar.episode(episode.id);
              return {
                client,
                // The embedded model keeps no list of what it received: the records show the attempts.
                received: [],
                exchanges: records(episode.records_dir, "exchanges"),
                status,
                recordsDir: episode.records_dir,
                code: run.code,
                context: run.context,
              };
            } finally {
              await sidecar.stop();
            }
          },
          (run) => {
            expectFinishedOnce(run);
            // The loaded model takes seconds to answer: streaming clients were kept waiting.
            const delivered = run.exchanges.filter((l) => l.stage === "delivered");
            expect(delivered.some((l) => typeof l.keepalives === "number")).toBe(true);
          },
        ),
      slowTimeoutMs + 60_000,
    );

    if (everyAnswerSlow)
      test(
        "every answer takes 150 s: each client still finishes (URA_E2E_EVERY_ANSWER_SLOW=1)",
        () =>
          forEachClient(
            (client) => runEpisode(client, { profile: slowAnswer, timeoutMs: 1_500_000 }),
            expectFinishedOnce,
          ),
        1_600_000,
      );
  },
);
