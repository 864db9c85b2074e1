/**
 * A person in the loop, end to end: each of the four real, pinned CLIs (Claude Code,
 * Codex, OpenCode, Gemini CLI) through the compiled binary, a manifest tool `move` with `approval: "always"`, a
 * robot controller over HTTP that logs every job (test/support/recording-executor.ts),
 * the scripted model looking once (a camera frame from the controller) and then asking
 * for one move (src/scripted-upstream/move-episode-reply.ts), and an operator in
 * Debian's Chromium (playwright-core) on the episode's /ui page, which shows the
 * pending move with the frame the model saw last:
 *   - approved on the page after a wait → the move runs once; the CLI waited for it
 *     (no timeout) and the model's next request carries the controller's receipt;
 *   - rejected with a reason → nothing ran; the model's next request carries
 *     "rejected by the operator: <reason>";
 *   - no decision → expiry after approval_timeout_ms, nothing ran, and an approval
 *     arriving afterwards is refused.
 * Every client and decision against the instant scripted model; against a slow,
 * throttling one (test/support/upstream-profiles-under-test.ts) each client once and each
 * decision at least once, where the model's turns are retried around the operator's wait.
 * Saves a screenshot of a pending approval (dist/ui-screenshots/approval.png; the one
 * in docs/ui-approval.png comes from it). Needs `make build` and the pinned clients.
 * Runs in a loopback-only network namespace when one can be made.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import type { ClientName } from "../../src/clients/client-manifests.ts";
import { cameraLikePng } from "../../src/images/synthetic-frames.ts";
import { moveEpisodeReply, scriptedMove } from "../../src/scripted-upstream/move-episode-reply.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { openChromium } from "../support/chromium.ts";
import { assertPrerequisites, type ClientRun, runClient, type Upstream } from "../support/client-run.ts";
import { type Line, records, settledExchanges } from "../support/episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { serveRecordingExecutor } from "../support/recording-executor.ts";
import {
  controlPassword,
  type LaunchInfo,
  type SidecarProcess,
  startSidecarProcess,
} from "../support/sidecar-process.ts";
import {
  expectOneAnswerPerExchange,
  forEachUpstreamProfile,
  type UpstreamProfileUnderTest,
} from "../support/upstream-profiles-under-test.ts";

const timeoutMs = 300_000;
const approvalTimeoutMs = 15_000;
const screenshots = resolve(import.meta.dir, "../../dist/ui-screenshots");

const manifest = {
  finish_tool: "finish",
  tools: [
    {
      name: "move",
      description: "Move the arm's tool point to (x, y) metres on the table.",
      input_schema: {
        type: "object",
        properties: { x: { type: "number" }, y: { type: "number" } },
        required: ["x", "y"],
      },
      route: "move",
      approval: "always",
    },
    {
      name: "observe",
      description: "Look at the table: one camera frame.",
      input_schema: { type: "object", properties: {} },
      route: "observe",
    },
    {
      name: "finish",
      description: "Finish the episode.",
      input_schema: { type: "object", properties: { answer: { type: "string" } } },
      route: "finish",
    },
  ],
};

type Decision = "approved" | "rejected" | "expired";
/** Under the slow upstream: each client once, each decision at least once (the whole matrix again would double the file's time). */
const loadedSample: Record<ClientName, Decision> = {
  claude: "approved",
  codex: "rejected",
  opencode: "expired",
  gemini: "approved",
};

let upstream: Upstream;
let controller: ReturnType<typeof serveRecordingExecutor>;
let sidecar: SidecarProcess;
let browser: BrowserContext;
let page: Page;

type Scenario = {
  episode: LaunchInfo;
  run: ClientRun;
  ledger: Line[];
  /** What the scripted model received during the run, in order. */
  requests: string[];
  /** The move jobs the controller got for this episode. */
  jobs: { tool: string; call_id: string }[];
};

/** The CLI on a new episode while `operator` acts on its /ui page; everything that happened. */
async function scenario(
  client: ClientName,
  profile: UpstreamProfileUnderTest,
  operator: (episode: LaunchInfo) => Promise<void>,
): Promise<Scenario> {
  assertPrerequisites(client);
  // The profile's windows count from here: each scenario meets the throttle and the 500 burst.
  upstream.scripted.setProfile(profile.profile);
  const episode = await sidecar.createEpisode({ client, manifest });
  const before = upstream.scripted.received.length;
  const running = runClient(client, sidecar, episode, { timeoutMs: 180_000 });
  await operator(episode);
  const run = await running;
  const received = upstream.scripted.received.slice(before);
  const evidence = expectOneAnswerPerExchange(received, await settledExchanges(episode.records_dir));
  console.log(`${client}${profile.label}: ${JSON.stringify(evidence)}`);
  const requests = received.map((r) => JSON.stringify(r.body));
  const jobs = [...controller.jobs.values()]
    .filter((j) => j.body.episode_id === episode.id && j.body.tool === "move")
    .map((j) => j.body);
  return { episode, run, ledger: records(episode.records_dir, "ledger"), requests, jobs };
}

/** Opens the episode page and waits until the call shows as pending (the page reloads itself as records grow). */
async function pendingOnPage(episode: LaunchInfo) {
  await page.goto(`${sidecar.url}/ui/episodes/${episode.id}`);
  const pending = page.locator("[data-approval]");
  await pending.waitFor({ timeout: 120_000 });
  expect(await pending.locator("strong").textContent()).toBe("move");
  const shown = JSON.parse((await pending.locator("pre.arguments").textContent()) ?? "null");
  expect(shown).toEqual(scriptedMove);
  // The frame the model saw before it asked, loaded.
  const latest = page.locator('#approvals figure[data-side="latest"] img');
  expect(await latest.count()).toBeGreaterThanOrEqual(1);
  await page.waitForFunction(() => {
    const images = (globalThis as unknown as { document: { images: { naturalWidth: number }[] } }).document
      .images;
    return [...images].every((img) => img.naturalWidth > 0);
  });
  return pending;
}

/** The ledger events of the episode's one move call. */
const moveEvents = (ledger: Line[]) => {
  const calls = ledger
    .filter((e) => e.type === "registered")
    .flatMap((e) => e.calls as { id: string; tool: string }[]);
  const moves = calls.filter((c) => c.tool === "move");
  expect(moves).toHaveLength(1);
  return ledger.filter((e) => e.callId === moves[0]?.id);
};

/** The move's tool result in the model's last request: what the client got back for the call. */
function lastToolResult(requests: string[]): string {
  const last = JSON.parse(requests.at(-1) ?? "{}") as { messages?: { role: string; content?: unknown }[] };
  const result = (last.messages ?? []).findLast((m) => m.role === "tool");
  return typeof result?.content === "string" ? result.content : JSON.stringify(result?.content ?? null);
}

/**
 * The run ended normally, the CLI never gave up on the held call (its tool result is
 * the sidecar's answer, not a client timeout), and the model's last request carried it.
 */
function expectFinished(client: ClientName, s: Scenario, resultText: string) {
  try {
    expect(s.run.code).toBe(0);
    expect(s.run.stdout).toContain("The move is over");
    const result = lastToolResult(s.requests);
    expect(result).toContain(resultText);
    expect(result).not.toMatch(/timed out|aborting|MCP error -32001/i);
  } catch (error) {
    console.error(`${client}: ${s.run.context}`);
    throw error;
  }
}

describeInLoopbackNamespace(
  "operator approval with real CLIs",
  { file: import.meta.path, timeoutMs: 16 * timeoutMs },
  () => {
    beforeAll(async () => {
      upstream = await serveScriptedUpstream(0, { decide: moveEpisodeReply() });
      // The camera: a frame for `observe`; every other job says whose call it ran.
      const frame = cameraLikePng(160, 120, 7).toBase64();
      controller = serveRecordingExecutor({
        receipt: (job) =>
          job.body.tool === "observe"
            ? {
                ok: true,
                content: [
                  { type: "image", data: frame, mimeType: "image/png" },
                  { type: "text", text: "frame 1" },
                ],
              }
            : {
                ok: true,
                content: [
                  {
                    type: "text",
                    text: `ran ${job.body.tool} for episode ${job.body.episode_id} call ${job.body.call_id}`,
                  },
                ],
              },
      });
      sidecar = await startSidecarProcess({
        upstreamUrl: upstream.url,
        config: {
          approval_timeout_ms: approvalTimeoutMs,
          mcp_progress_interval_ms: 2_000,
          executor: { kind: "http", url: controller.url, poll_wait_ms: 0, retry_delay_ms: 10 },
        },
      });
      browser = await openChromium({ viewport: { width: 1100, height: 900 } });
      page = await browser.newPage();
      await page.goto(`${sidecar.url}/ui/login`);
      await page.fill("input[name=password]", controlPassword);
      await page.click("button[type=submit]");
    });

    afterAll(async () => {
      await browser?.close();
      await sidecar?.stop();
      controller?.stop();
      upstream?.stop();
    });

    forEachUpstreamProfile((profile) => {
      for (const client of ["claude", "codex", "opencode", "gemini"] as const) {
        const runs = (decision: Decision) => !profile.loaded || loadedSample[client] === decision;
        if (runs("approved"))
          test(
            `${client}: approved on the episode page after a wait → the move runs once; the CLI waited${profile.label}`,
            async () => {
              const s = await scenario(client, profile, async (episode) => {
                const pending = await pendingOnPage(episode);
                // Long enough for several progress notifications while the CLI waits.
                await Bun.sleep(5_000);
                await page.waitForFunction(() => {
                  const waited = (
                    globalThis as unknown as {
                      document: { querySelector(s: string): { textContent: string } | null };
                    }
                  ).document.querySelector(".waited");
                  return Number.parseInt(waited?.textContent ?? "0", 10) >= 4;
                });
                if (client === "claude" && !profile.loaded) {
                  mkdirSync(screenshots, { recursive: true });
                  await page.screenshot({ path: join(screenshots, "approval.png"), fullPage: true });
                }
                await pending.locator("button.approve").click();
                await page.waitForURL(`${sidecar.url}/ui/episodes/${episode.id}`);
                expect(await page.locator("[data-approval]").count()).toBe(0);
              });
              expect(s.jobs).toHaveLength(1);
              expect(s.jobs[0]).toMatchObject({ tool: "move", arguments: scriptedMove });
              expect(moveEvents(s.ledger).map((e) => e.type)).toEqual([
                "claimed",
                "approval_requested",
                "approved",
                "submitted",
                "acknowledged",
                "receipt",
              ]);
              expect(moveEvents(s.ledger).find((e) => e.type === "approved")).toMatchObject({ by: "ui" });
              expectFinished(client, s, `ran move for episode ${s.episode.id}`);
            },
            timeoutMs,
          );

        if (runs("rejected"))
          test(
            `${client}: rejected with a reason → nothing ran; the model's next request carries the rejection${profile.label}`,
            async () => {
              const reason = "too close to the table edge";
              const s = await scenario(client, profile, async (episode) => {
                const pending = await pendingOnPage(episode);
                await pending.locator("input[name=reason]").fill(reason);
                await pending.locator("button.reject").click();
                await page.waitForURL(`${sidecar.url}/ui/episodes/${episode.id}`);
              });
              expect(s.jobs).toEqual([]);
              expect(moveEvents(s.ledger).map((e) => e.type)).toEqual([
                "claimed",
                "approval_requested",
                "rejected",
              ]);
              expect(moveEvents(s.ledger).at(-1)).toMatchObject({ by: "ui", reason });
              expectFinished(client, s, `rejected by the operator: ${reason}`);
            },
            timeoutMs,
          );

        if (runs("expired"))
          test(
            `${client}: no decision → rejected after approval_timeout_ms, nothing ran; a late approval is refused${profile.label}`,
            async () => {
              const started = Date.now();
              const s = await scenario(client, profile, async () => {});
              expect(Date.now() - started).toBeGreaterThanOrEqual(approvalTimeoutMs);
              expect(s.jobs).toEqual([]);
              const events = moveEvents(s.ledger);
              expect(events.map((e) => e.type)).toEqual(["claimed", "approval_requested", "rejected"]);
              expect(events.at(-1)).toMatchObject({ by: "timeout" });
              expectFinished(
                client,
                s,
                `rejected by the operator: no decision within ${approvalTimeoutMs} ms`,
              );
              const late = await sidecar.control(
                `/episodes/${s.episode.id}/approvals/${String(events[0]?.callId)}`,
                {
                  method: "POST",
                  body: JSON.stringify({ decision: "approve" }),
                },
              );
              expect(late.status).toBe(409);
              expect(
                [...controller.jobs.values()].filter(
                  (j) => j.body.episode_id === s.episode.id && j.body.tool === "move",
                ),
              ).toEqual([]);
            },
            timeoutMs,
          );
      }
    });
  },
);
