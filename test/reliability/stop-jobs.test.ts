/**
 * The executor's optional stop verb through the compiled binary, against a robot
 * controller over HTTP that logs every stop (test/support/recording-executor.ts):
 * with the manifest's `stop`, the jobs in flight are asked to stop when the episode
 * is cancelled, when its client disappears for the grace period, and when its
 * deadline passes — each stop journaled with its reason and the controller's
 * answer. Without `stop` in the manifest nothing is ever stopped. Needs `make build`.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import robotManifest from "../../manifests/tools/robot.json";
import {
  callBack,
  cannedUpstreamForFile,
  deliveredCalls,
  hardenedSidecarFor,
  ledgerOf,
  mcpClient,
  responsesTurn,
  startHardenedSidecar,
} from "../support/hardening-kit.ts";
import { serveRecordingExecutor } from "../support/recording-executor.ts";
import type { LaunchInfo, SidecarProcess } from "../support/sidecar-process.ts";

setDefaultTimeout(30_000);

const upstream = cannedUpstreamForFile();
// Each job's receipt takes 20 s unless it is stopped: a job stays in flight for the whole test.
const controller = serveRecordingExecutor({ receiptDelayMs: 20_000 });
afterAll(() => controller.stop());
const sidecar = hardenedSidecarFor(upstream, {
  executor: { kind: "http", url: controller.url, poll_wait_ms: 0, retry_delay_ms: 10 },
  shutdown: { drain_deadline_ms: 500 },
});

const withStop = { ...robotManifest, stop: { abandon_grace_ms: 400 } };

/** A new episode whose first call, `observe`, is acknowledged by the controller and runs. */
async function jobInFlight(
  sidecar: SidecarProcess,
  options: Record<string, unknown>,
  callId: string,
): Promise<{
  episode: LaunchInfo;
  client: Awaited<ReturnType<typeof mcpClient>>;
  pending: Promise<unknown>;
}> {
  const episode = await sidecar.createEpisode(options);
  upstream.calls({ id: callId, name: "ura_observe", arguments: "{}" });
  const [call] = await deliveredCalls(await responsesTurn(episode));
  expect(call?.call_id).toBe(callId);
  const client = await mcpClient(episode);
  const pending = callBack(client, "observe", {}, callId).catch((error: unknown) => error);
  for (let i = 0; i < 500; i++) {
    if (ledgerOf(episode).some((e) => e.type === "acknowledged" && e.callId === callId)) break;
    await Bun.sleep(10);
  }
  return { episode, client, pending };
}

const stopsFor = (episode: LaunchInfo) => controller.stops.filter((s) => s.body.episode_id === episode.id);

async function journaledStop(episode: LaunchInfo, callId: string) {
  for (let i = 0; i < 300; i++) {
    const answered = ledgerOf(episode).find((e) => e.type === "stop_answered" && e.callId === callId);
    if (answered) return answered;
    await Bun.sleep(20);
  }
  throw new Error("no stop_answered in the journal");
}

describe("stop: the executor is asked to stop the episode's jobs in flight", () => {
  test("on cancel", async () => {
    const { episode, client } = await jobInFlight(sidecar, { manifest: withStop }, "call_cancel");
    const res = await sidecar.control(`/episodes/${episode.id}/cancel`, { method: "POST" });
    expect(res.status).toBe(200);
    expect(stopsFor(episode)).toEqual([
      {
        jobId: expect.any(String),
        body: expect.objectContaining({ call_id: "call_cancel", reason: "cancelled" }),
      },
    ]);
    const ledger = ledgerOf(episode);
    const requested = ledger.findIndex((e) => e.type === "stop_requested" && e.callId === "call_cancel");
    const answered = ledger.findIndex((e) => e.type === "stop_answered" && e.callId === "call_cancel");
    expect(requested).toBeGreaterThan(-1);
    // Journaled before the controller was asked, its answer after.
    expect(answered).toBeGreaterThan(requested);
    expect(ledger[answered]).toMatchObject({ reason: "cancelled", status: 200, stopped: true });
    await client.close();
  });

  test("when the client disappears (no request, no MCP connection) for the grace period", async () => {
    const { episode, client, pending } = await jobInFlight(sidecar, { manifest: withStop }, "call_gone");
    // Still there: the held call's connection is open, nothing is stopped.
    await Bun.sleep(700);
    expect(stopsFor(episode)).toEqual([]);
    await client.close(); // the client process is gone: its connections close
    await pending;
    const answered = await journaledStop(episode, "call_gone");
    expect(answered).toMatchObject({ reason: "abandoned", stopped: true });
    expect(stopsFor(episode).map((s) => s.body.reason)).toEqual(["abandoned"]);
    const status = await sidecar.episode(episode.id);
    expect(status.state).toBe("running");
  });

  test("when the episode's deadline passes", async () => {
    const { episode, client } = await jobInFlight(
      sidecar,
      { manifest: withStop, deadline_ms: 1_500 },
      "call_late",
    );
    const answered = await journaledStop(episode, "call_late");
    expect(answered).toMatchObject({ reason: "deadline", stopped: true });
    const status = await sidecar.episode(episode.id);
    expect(status.failure).toMatchObject({ reason: "deadline" });
    await client.close();
  });

  test("when a shutdown's drain overruns its deadline, before the records freeze", async () => {
    const own = await startHardenedSidecar(upstream, {
      executor: { kind: "http", url: controller.url, poll_wait_ms: 0, retry_delay_ms: 10 },
      shutdown: { drain_deadline_ms: 300 },
    });
    const { episode } = await jobInFlight(own, { manifest: withStop }, "call_drain");
    expect(await own.stop()).toBe(3); // the drain overran: a cleanup failure, as before
    expect(stopsFor(episode).map((s) => s.body.reason)).toEqual(["drain_overrun"]);
    expect(ledgerOf(episode).find((e) => e.type === "stop_answered")).toMatchObject({
      callId: "call_drain",
      reason: "drain_overrun",
      stopped: true,
    });
  });

  test("without `stop` in the manifest nothing is stopped, on cancel or when the client leaves", async () => {
    const { episode, client, pending } = await jobInFlight(sidecar, { manifest: robotManifest }, "call_kept");
    await client.close();
    await pending;
    await Bun.sleep(800);
    await sidecar.control(`/episodes/${episode.id}/cancel`, { method: "POST" });
    expect(stopsFor(episode)).toEqual([]);
    expect(ledgerOf(episode).filter((e) => e.type.startsWith("stop_"))).toEqual([]);
  });
});
