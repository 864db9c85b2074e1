/**
 * End to end, per client: an episode on a model whose window is 32K (declared in
 * config: 32,768 tokens, 30,720 of prompt; 64K for Claude Code), run long enough that its
 * history would overflow the upstream, which answers Model Studio's context-length 400
 * over the model's prompt limit (the scripted upstream's input limit). The kit tells the client the
 * model's limits (src/kits/model-limits.ts); the client must compact (a summary request
 * through the same route) before the upstream would refuse — or, where it cannot, the
 * sidecar's window guard must reduce the request (src/context/window-guard.ts): no request
 * over the limit, no failed turn, the episode finished. Real CLIs, the compiled binary, a
 * loopback-only network namespace.
 *
 * Codex and OpenCode compact and finish. Gemini CLI 0.61.0 and Claude Code 2.1.332 do
 * not (docs/long-sessions.md, "Told limits"): Gemini CLI reaches its trigger but splits
 * the history only before a user prompt that is not a function response, and a robot
 * episode is one prompt and its tool loop, so there is nothing it can compress: the
 * sidecar's window guard omits its oldest frames instead (recorded in `after_context`),
 * and that is what it is tested on here. Claude Code reports a 32,000-token output
 * reserve for the model whatever CLAUDE_CODE_MAX_OUTPUT_TOKENS says, so in 30,720 its own
 * prompt refills the window right after each compaction and it stops
 * (`compact_thrashing`); on a 64K window it compacts and finishes, which is what it is
 * tested on here.
 *
 * The scripted model observes once per turn (each frame a 1280 × 720 tool-result image
 * the client resends, ~1,200 prompt tokens as Qwen-VL counts its pixels, about 1,300 a
 * turn) for `observations` turns counted across compactions, finishes, then answers in
 * text; a request asking for a summary (each client's compaction prompt) gets a short
 * summary. */
import { expect, test } from "bun:test";
import type { ClientName } from "../../src/clients/client-manifests.ts";
import type { ModelCapabilities } from "../../src/models/model-capabilities.ts";
import { countPromptTokens, type DecideReply } from "../../src/scripted-upstream/create-scripted-upstream.ts";
import { type ScriptedRequest, toolNamed } from "../../src/scripted-upstream/decide-reply.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { assertPrerequisites, runClient } from "../support/client-run.ts";
import { records } from "../support/episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { startSidecarProcess } from "../support/sidecar-process.ts";

const timeoutMs = 420_000;

/** A declared model of `window` tokens, `window − 2K` of them prompt. */
function smallModel(window: number): ModelCapabilities {
  return {
    context_window: window,
    max_input_tokens: window - 2048,
    max_output_tokens: 8192,
    image_input: true,
    video_input: false,
    thinking: "none",
    cache: "implicit",
    tool_calls: true,
  };
}

/**
 * Each client on the smallest window it can work in, with enough frames to overflow it
 * (about 1,300 prompt tokens a frame): 32K for Codex, OpenCode and Gemini CLI; Claude
 * Code's own prompt and reserves do not fit 32K (see above), so 64K. `guarded`: the
 * client cannot compact its tool loop, the sidecar's window guard keeps it running.
 */
const scenarios: { client: ClientName; window: number; observations: number; guarded?: boolean }[] = [
  { client: "codex", window: 32768, observations: 24 },
  { client: "opencode", window: 32768, observations: 24 },
  { client: "claude", window: 65536, observations: 44 },
  { client: "gemini", window: 32768, observations: 30, guarded: true },
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
  const state = { observed: 0, finished: false, textOnly: 0 };
  const decide: DecideReply = async (request) => {
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

describeInLoopbackNamespace(
  "a small-window model: each client compacts (or the window guard reduces) before the upstream refuses",
  { file: import.meta.path, timeoutMs: timeoutMs * runs.length },
  () => {
    for (const { client, window, observations, guarded } of runs) {
      const model = `qwen-small-${window / 1024}k`;
      const small = smallModel(window);
      test(
        `${client}, a ${window / 1024}K window: ${guarded ? "the window guard reduces" : "compacts"}, no request over ${small.max_input_tokens} prompt tokens, no failed turn`,
        async () => {
          assertPrerequisites(client);
          const brain = longWindowBrain(observations);
          const upstream = await serveScriptedUpstream(0, {
            decide: brain.decide,
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
            const exchanges = records(episode.records_dir, "exchanges");
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
              compactions,
              largestPrompt: Math.max(...received.map((r) => countPromptTokens(JSON.stringify(r.body)))),
              refused: refused.length,
              guardedTurns,
              failed: failed.length,
              state: status.state,
            };
            console.log(`${client} small window: ${JSON.stringify(figures)}`);
            if (run.code !== 0 || status.state !== "finished" || refused.length > 0)
              console.error(`${run.context}\nepisode: ${JSON.stringify(status)}`);
            expect(refused).toHaveLength(0);
            expect(failed).toHaveLength(0);
            if (guarded) expect(guardedTurns).toBeGreaterThan(0);
            else expect(compactions).toBeGreaterThan(0);
            expect(brain.state.observed).toBe(observations);
            expect(status.state).toBe("finished");
            expect(run.code).toBe(0);
          } finally {
            await sidecar.stop();
            upstream.stop();
          }
        },
        timeoutMs,
      );
    }
  },
);
