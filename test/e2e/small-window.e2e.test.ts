/**
 * End to end, per client: an episode on a model whose window is 32K (declared in config:
 * 32,768 tokens, 30,720 of prompt), run long enough that its history would overflow the
 * upstream, which answers Model Studio's context-length 400 over the model's prompt limit
 * (the scripted upstream's input limit). The kit tells the client the model's limits
 * (src/kits/model-limits.ts); the client must compact (a summary request through the same
 * route) before the upstream would refuse — or, where it cannot, the sidecar's window guard
 * must reduce the request (src/context/window-guard.ts): no request over the limit, no
 * failed turn, the episode finished. Real CLIs, the compiled binary, a loopback-only
 * network namespace.
 *
 * Codex, OpenCode and Claude Code compact and finish. Gemini CLI 0.61.0 does not
 * (docs/long-sessions.md, "Told limits"): it reaches its trigger but splits the history
 * only before a user prompt that is not a function response, and a robot episode is one
 * prompt and its tool loop, so there is nothing it can compress: the sidecar's window
 * guard omits its oldest frames instead (recorded in `after_context`), and that is what it
 * is tested on here. Claude Code compacts at its told window less its own reserves, which
 * in the real 30,720 would fall below its own ~15K prompt (it would stop,
 * `compact_thrashing`); its kit tells it a larger window so that it compacts at 80% of the
 * real one (src/kits/claude-context-tokens.ts), and whatever it sends past the real limit
 * meanwhile the window guard reduces.
 *
 * The scripted model observes once per turn (each frame a 1280 × 720 tool-result image
 * the client resends, ~1,200 prompt tokens as Qwen-VL counts its pixels, about 1,300 a
 * turn) for `observations` turns counted across compactions, finishes, then answers in
 * text; a request asking for a summary (each client's compaction prompt) gets a short
 * summary. Each client alone against the instant scripted model, and the four at once
 * against a slow, throttling one (test/support/upstream-profiles-under-test.ts), where a
 * retried request gets the answer its first attempt got. */
import { expect, test } from "bun:test";
import type { ClientName } from "../../src/clients/client-manifests.ts";
import { countPromptTokens, type DecideReply } from "../../src/scripted-upstream/create-scripted-upstream.ts";
import { type ScriptedRequest, toolNamed } from "../../src/scripted-upstream/decide-reply.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { assertPrerequisites, runClient } from "../support/client-run.ts";
import { declaredModel } from "../support/declared-model.ts";
import { records, settledExchanges } from "../support/episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { startSidecarProcess } from "../support/sidecar-process.ts";
import {
  expectOneAnswerPerExchange,
  forEachUpstreamProfile,
  type UpstreamProfileUnderTest,
  upstreamProfilesUnderTest,
} from "../support/upstream-profiles-under-test.ts";

const timeoutMs = 420_000;

/**
 * Each client on a 32K model with enough frames to overflow it (about 1,300 prompt tokens
 * a frame). `guarded`: the client cannot compact its tool loop, the sidecar's window
 * guard keeps it running.
 */
const scenarios: { client: ClientName; observations: number; guarded?: boolean }[] = [
  { client: "codex", observations: 24 },
  { client: "opencode", observations: 24 },
  { client: "claude", observations: 30 },
  { client: "gemini", observations: 30, guarded: true },
];

/** Camera-sized frames: what a frame costs the model is its pixel size, not its bytes. */
const cameraFrames = { kind: "inert", frame_width: 1280, frame_height: 720 };

/**
 * A compaction request that still declares the tools, by its client's prompt (Codex's
 * checkpoint, Claude Code's summary task, Gemini CLI's snapshot); the others declare no
 * robot tools at all.
 */
const summaryRequest =
  /CONTEXT CHECKPOINT COMPACTION|create a detailed summary of the conversation|generate the <state_snapshot>/i;

function lastUserText(request: ScriptedRequest): string {
  const user = request.messages.filter((m) => m.role === "user").at(-1);
  if (!user) return "";
  const content = (user as { content?: unknown }).content;
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content.map((p) => (typeof p?.text === "string" ? (p.text as string) : "")).join("\n");
  return "";
}

function longWindowBrain(observations: number) {
  const state = { observed: 0, finished: false, textOnly: 0, resent: 0 };
  // A retry resends its request's body verbatim: it gets the answer the first attempt got,
  // so the count of observations moves once per turn, not once per attempt.
  const answered = new Map<bigint | number, ReturnType<DecideReply>>();
  const decide: DecideReply = (request, readPixel) => {
    const key = Bun.hash(JSON.stringify(request));
    const earlier = answered.get(key);
    if (earlier) {
      state.resent += 1;
      return earlier;
    }
    const reply = decideOnce(request, readPixel);
    answered.set(key, reply);
    return reply;
  };
  const decideOnce: DecideReply = async (request) => {
    const observe = toolNamed(request, "observe");
    const finish = toolNamed(request, "finish");
    // A compaction (or a title) request: a short text serves as either.
    if (!observe || !finish || summaryRequest.test(lastUserText(request))) {
      state.textOnly += 1;
      return {
        kind: "text",
        text: "<state_snapshot>Summary: the robot observed the scene several times; keep observing, then finish.</state_snapshot>",
      };
    }
    if (state.observed < observations) {
      state.observed += 1;
      return { kind: "tool_calls", calls: [{ name: observe, arguments: "{}" }] };
    }
    if (!state.finished) {
      state.finished = true;
      return { kind: "tool_calls", calls: [{ name: finish, arguments: JSON.stringify({ answer: "seen" }) }] };
    }
    return { kind: "text", text: `Done after ${observations} observations.` };
  };
  return { decide, state };
}

/** URA_SMALL_WINDOW_CLIENTS=codex,claude runs only those (the file re-runs itself in the namespace). */
const chosen = process.env.URA_SMALL_WINDOW_CLIENTS?.split(",");
const runs = scenarios.filter((s) => chosen === undefined || chosen.includes(s.client));

const model = "qwen-small-32k";
const small = declaredModel();

/** One client's long episode on the 32K model against `profile`, and what must hold of it. */
async function smallWindowEpisode(
  { client, observations, guarded }: (typeof scenarios)[number],
  profile: UpstreamProfileUnderTest,
): Promise<void> {
  assertPrerequisites(client);
  const brain = longWindowBrain(observations);
  const upstream = await serveScriptedUpstream(0, {
    decide: brain.decide,
    profile: profile.profile,
    maxInputTokens: (name) => (name === model ? small.max_input_tokens : undefined),
  });
  const sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    config: {
      log_level: "warn",
      upstream: { model, models: { [model]: small } },
      executor: cameraFrames,
    },
  });
  try {
    const episode = await sidecar.createEpisode({ client });
    const run = await runClient(client, sidecar, episode, {
      timeoutMs: timeoutMs - 30_000,
      ...(client === "gemini" ? { model } : {}),
    });
    const status = await sidecar.episode(episode.id);
    const received = upstream.scripted.received;
    const refused = received.filter((r) => r.fault === "input_too_long");
    // Compaction shows as a turn with the robot tools that carries fewer messages than the one before.
    const turns = received
      .map((r) => r.body as ScriptedRequest)
      .filter((b) => toolNamed(b, "observe") !== undefined)
      .map((b) => b.messages.length);
    const compactions = turns.filter((n, i) => i > 0 && n < (turns[i - 1] ?? 0)).length;
    const exchanges = await settledExchanges(episode.records_dir);
    const failed = exchanges.filter((line) => line.stage === "status" && line.status !== "delivered");
    const guardedTurns = exchanges.filter(
      (line) =>
        line.stage === "after_context" &&
        (line.decision as { window?: { engaged?: boolean } } | undefined)?.window?.engaged === true,
    ).length;
    const figures = {
      requests: received.length,
      observed: brain.state.observed,
      textOnly: brain.state.textOnly,
      resent: brain.state.resent,
      compactions,
      largestPrompt: Math.max(...received.map((r) => countPromptTokens(JSON.stringify(r.body)))),
      refused: refused.length,
      guardedTurns,
      failed: failed.length,
      state: status.state,
    };
    const evidence = expectOneAnswerPerExchange(received, exchanges);
    console.log(`${client} small window${profile.label}: ${JSON.stringify({ ...figures, ...evidence })}`);
    if (run.code !== 0 || status.state !== "finished" || refused.length > 0)
      console.error(`${run.context}\nepisode: ${JSON.stringify(status)}`);
    expect(refused).toHaveLength(0);
    expect(failed).toHaveLength(0);
    if (guarded) expect(guardedTurns).toBeGreaterThan(0);
    else {
      // The client's own compaction kept every request under the guard's trigger.
      expect(compactions).toBeGreaterThan(0);
      expect(guardedTurns).toBe(0);
    }
    expect(brain.state.observed).toBe(observations);
    // And the client really made them: one observe call per observation reached the robot.
    const ledger = records(episode.records_dir, "ledger");
    const observeIds = new Set(
      ledger
        .flatMap((e) => (e.type === "registered" ? (e.calls as { id: string; tool: string }[]) : []))
        .filter((c) => c.tool === "observe")
        .map((c) => c.id),
    );
    expect(ledger.filter((e) => e.type === "claimed" && observeIds.has(e.callId as string))).toHaveLength(
      observations,
    );
    expect(status.state).toBe("finished");
    expect(run.code).toBe(0);
  } finally {
    await sidecar.stop();
    upstream.stop();
  }
}

const title = ({ client, guarded }: (typeof scenarios)[number]) =>
  `${client}, a 32K window: ${guarded ? "the window guard reduces" : "compacts"}, no request over ${small.max_input_tokens} prompt tokens, no failed turn`;

describeInLoopbackNamespace(
  "a small-window model: each client compacts (or the window guard reduces) before the upstream refuses",
  { file: import.meta.path, timeoutMs: timeoutMs * (runs.length + upstreamProfilesUnderTest.length) },
  () =>
    forEachUpstreamProfile((profile) => {
      if (!profile.loaded) {
        for (const scenario of runs)
          test(title(scenario), () => smallWindowEpisode(scenario, profile), timeoutMs);
        return;
      }
      // The slow upstream mostly keeps the clients waiting: they run at once, each on its own upstream.
      test(
        `${runs.map((r) => r.client).join(", ")} at once: each compacts (or the window guard reduces), no request over the limit, no failed turn${profile.label}`,
        async () => {
          const results = await Promise.allSettled(
            runs.map((scenario) => smallWindowEpisode(scenario, profile)),
          );
          const failed = results.flatMap((r, i) =>
            r.status === "rejected" ? [[runs[i]?.client, r.reason]] : [],
          );
          for (const [client, reason] of failed) console.error(`${client}${profile.label}:`, reason);
          if (failed.length > 0) throw failed[0]?.[1];
        },
        timeoutMs,
      );
    }),
);
