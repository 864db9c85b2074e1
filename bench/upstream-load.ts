/**
 * Upstream-load bench: 20 episodes × 10 turns at once (the official `openai` SDK,
 * Responses chained with previous_response_id) through the compiled binary, against
 * the scripted upstream's `loaded` profile (seconds to the head, a slow stream, a
 * tokens-per-minute throttle burst every minute, 5xx bursts, resets mid-stream, and a
 * key quota of 4 concurrent requests, 60 a minute, 200k tokens a minute), with the
 * sidecar's upstream budget set to that quota. The same run against the `instant`
 * profile (no load) is the baseline for the sidecar's CPU per exchange.
 *
 * Prints: episodes finished (goal 20/20); upstream attempts per delivered answer
 * (goal 1.00 plus the throttled and failed attempts); p50/p99 queue wait (from the
 * records' queue_ms); the pace achieved, as answers per minute against the configured
 * rate and against what the budget allows at the measured answer time
 * (min(RPM, max_concurrent × 60 s / mean attempt)); and the sidecar's CPU per
 * exchange (all threads, those that ended during the run included: `processCpuMs`)
 * loaded and unloaded.
 * Alone: `bun bench/upstream-load.ts` (needs `make build`; about six minutes);
 * `bun bench/upstream-load.ts 2 2` runs 2 episodes × 2 turns (a check of the bench itself).
 */
import OpenAI from "openai";
import type { ReceivedRequest } from "../src/scripted-upstream/create-scripted-upstream.ts";
import { records } from "../test/support/episode-evidence.ts";
import { startSidecarProcess } from "../test/support/sidecar-process.ts";
import { processCpuMs, untilReady } from "./exchange-cpu.ts";
import { spawnServer } from "./spawn-server.ts";

/** The full run's size; `bun bench/upstream-load.ts <episodes> <turns>` runs a smaller one. */
const fullSize = { episodes: 20, turns: 10 };
type Size = typeof fullSize;
/** The sidecar's share: the loaded profile's whole key quota (one sidecar on the key). */
const budget = { max_concurrent: 4, requests_per_minute: 60, tokens_per_minute: 200_000 };
/**
 * Long enough for the profile's 8 s throttle burst to pass (1 + 2 + 4 + 8 × 6 s of backoff);
 * within the retry time budget once the client retries by time rather than count.
 */
const retry = { max_attempts: 10, initial_backoff_ms: 1000, max_backoff_ms: 8000 };

type Attempt = { attempt: number; ms: number; queue_ms?: number; status?: number };

type Run = {
  finished: number;
  answers: number;
  upstreamRequests: ReceivedRequest[];
  attempts: Attempt[];
  cpuMs: number;
  seconds: number;
};

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

async function runEpisodes(profile: "loaded" | "instant", { episodes, turns }: Size): Promise<Run> {
  const upstream = await spawnServer(
    ["node_modules/.bin/bun", "src/scripted-upstream/serve-scripted-upstream.ts", "--profile", profile],
    /listening: (http:\/\/\S+)/,
  );
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    config: { upstream: { budget, retry } },
    args: ["--log-level", "warn"],
  });
  try {
    await untilReady(sidecar.url);
    const launched = await Promise.all(Array.from({ length: episodes }, () => sidecar.createEpisode({})));
    const cpuBefore = processCpuMs(sidecar.proc.pid);
    const started = performance.now();
    const delivered = await Promise.all(
      launched.map(async (episode, e) => {
        const client = new OpenAI({
          apiKey: episode.ingress_key,
          baseURL: episode.urls.responses,
          maxRetries: 0,
        });
        let previous: string | undefined;
        let answered = 0;
        try {
          for (let turn = 1; turn <= turns; turn++) {
            const response = await client.responses.create({
              model: "qwen3-vl-plus",
              input: `episode ${e}, turn ${turn}: what next?`,
              ...(previous ? { previous_response_id: previous } : {}),
            });
            previous = response.id;
            answered += 1;
          }
        } catch (error) {
          console.error(`episode ${episode.id} stopped at turn ${answered + 1}: ${String(error)}`);
        }
        return answered;
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpu = processCpuMs(sidecar.proc.pid) - cpuBefore;
    const origin = new URL(upstream.url).origin;
    const received = (await (await fetch(`${origin}/__script/requests`)).json()) as ReceivedRequest[];
    return {
      finished: delivered.filter((n) => n === turns).length,
      answers: delivered.reduce((a, b) => a + b, 0),
      upstreamRequests: received.filter((r) => r.path.endsWith("/chat/completions")),
      attempts: launched.flatMap((episode) =>
        records(episode.records_dir, "exchanges")
          .filter((l) => l.stage === "upstream_response")
          .flatMap((l) => l.attempts as Attempt[]),
      ),
      cpuMs: cpu,
      seconds,
    };
  } finally {
    // The upstream goes even when the sidecar's stop fails; a sidecar that did not exit 0
    // (its drain overran, it was killed) is said, not passed over.
    try {
      const code = await sidecar.stopAndRemove();
      if (code !== 0) console.error(`the ${profile} run's sidecar exited ${code} when stopped`);
    } finally {
      upstream.proc.kill();
    }
  }
}

export async function runUpstreamLoadBench(
  log: (line: string) => void = console.log,
  size: Size = fullSize,
): Promise<Record<string, number>> {
  const { episodes, turns } = size;
  const loaded = await runEpisodes("loaded", size);
  const unloaded = await runEpisodes("instant", size);

  const requests = loaded.upstreamRequests;
  const throttled = requests.filter(
    (r) => r.profile === "allocation_quota" || r.profile?.startsWith("quota"),
  );
  const answeredUpstream = requests.filter((r) => r.completed && !r.aborted && r.profile === undefined);
  const waits = loaded.attempts.map((a) => a.queue_ms ?? 0).sort((a, b) => a - b);
  const times = requests.map((r) => Date.parse(r.at));
  const ends = answeredUpstream.map((r) => Date.parse(r.ended_at ?? r.at));
  const minutes = (Math.max(...ends) - Math.min(...times)) / 60_000;
  const perMinute = answeredUpstream.length / minutes;
  const meanAttemptMs =
    answeredUpstream.reduce((sum, r) => sum + Date.parse(r.ended_at ?? r.at) - Date.parse(r.at), 0) /
    Math.max(1, answeredUpstream.length);
  const allowed = Math.min(budget.requests_per_minute, (budget.max_concurrent * 60_000) / meanAttemptMs);

  const figures: Record<string, number> = {
    upstream_load_episodes_finished: loaded.finished,
    upstream_load_answers_delivered: loaded.answers,
    upstream_load_attempts_per_answer: requests.length / Math.max(1, loaded.answers),
    upstream_load_throttled_attempts: throttled.length,
    upstream_load_queue_wait_p50_ms: percentile(waits, 50),
    upstream_load_queue_wait_p99_ms: percentile(waits, 99),
    upstream_load_answers_per_minute: perMinute,
    upstream_load_pace_vs_configured_rate: perMinute / budget.requests_per_minute,
    upstream_load_pace_vs_allowed_rate: perMinute / allowed,
    upstream_load_mean_attempt_ms: meanAttemptMs,
    upstream_load_cpu_ms_per_exchange: loaded.cpuMs / Math.max(1, loaded.answers),
    upstream_load_unloaded_cpu_ms_per_exchange: unloaded.cpuMs / Math.max(1, unloaded.answers),
    upstream_load_seconds: loaded.seconds,
    upstream_load_unloaded_episodes_finished: unloaded.finished,
  };
  const f = figures as Record<keyof typeof figures, number>;
  const other = requests.length - answeredUpstream.length - throttled.length;
  log(
    `${episodes} episodes × ${turns} turns, budget ${budget.max_concurrent} concurrent / ${budget.requests_per_minute} a minute / ${budget.tokens_per_minute} tokens a minute, loaded profile, ${loaded.seconds.toFixed(0)} s`,
  );
  log("| figure | loaded | unloaded (instant) |");
  log("|---|---|---|");
  log(
    `| episodes finished (goal ${episodes}/${episodes}) | ${loaded.finished}/${episodes} | ${unloaded.finished}/${episodes} |`,
  );
  log(
    `| upstream attempts per delivered answer (goal 1.00 + throttled) | ${f.upstream_load_attempts_per_answer?.toFixed(2)} (${throttled.length} throttled, ${other} failed or cut, over ${loaded.answers} answers) | ${(unloaded.upstreamRequests.length / Math.max(1, unloaded.answers)).toFixed(2)} |`,
  );
  log(
    `| queue wait p50 / p99 | ${f.upstream_load_queue_wait_p50_ms} / ${f.upstream_load_queue_wait_p99_ms} ms | ${percentile(
      unloaded.attempts.map((a) => a.queue_ms ?? 0).sort((a, b) => a - b),
      50,
    )} / ${percentile(
      unloaded.attempts.map((a) => a.queue_ms ?? 0).sort((a, b) => a - b),
      99,
    )} ms |`,
  );
  log(
    `| answers a minute; vs the configured ${budget.requests_per_minute}; vs allowed at a mean attempt of ${(meanAttemptMs / 1000).toFixed(1)} s (${allowed.toFixed(1)}; goal ≥ 0.9) | ${perMinute.toFixed(1)}; ${f.upstream_load_pace_vs_configured_rate?.toFixed(2)}; ${f.upstream_load_pace_vs_allowed_rate?.toFixed(2)} | — |`,
  );
  log(
    `| sidecar CPU per exchange, all threads | ${f.upstream_load_cpu_ms_per_exchange?.toFixed(2)} ms | ${f.upstream_load_unloaded_cpu_ms_per_exchange?.toFixed(2)} ms |`,
  );
  return figures;
}

if (import.meta.main) {
  const [episodes, turns] = process.argv.slice(2).map(Number);
  const figures = await runUpstreamLoadBench(console.log, {
    episodes: episodes ?? fullSize.episodes,
    turns: turns ?? fullSize.turns,
  });
  for (const [k, v] of Object.entries(figures))
    console.log(`${k} = ${Number.isInteger(v) ? v : v.toFixed(3)}`);
  process.exit(0);
}
