/**
 * Graceful shutdown of the compiled binary with work in flight: an MCP callback
 * executing at the (slow) inert executor and a model exchange waiting on the
 * scripted upstream. SIGTERM must refuse new work (503 `unavailable`), cancel the
 * upstream request (the upstream sees the socket close), let the callback finish
 * when the deadline allows, freeze the records, and exit 0 — or 3 with
 * `complete: false` when the callback outlasts the deadline. A second signal
 * forces the exit. Needs `make build`.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  callbackInFlight,
  fileUpstream,
  firstTurn,
  injectFaults,
  ledgerEvents,
  readJson,
  responsesRequest,
  resultText,
  startSidecar,
  upstreamRequests,
  waitFor,
} from "../support/lifecycle-kit.ts";
import type { LaunchInfo, SidecarProcess } from "../support/sidecar-process.ts";

const upstream = await fileUpstream(30_000);

/** Runs the first turn, starts its callback and a second exchange that hangs at the upstream. */
async function workInFlight(sidecar: SidecarProcess) {
  const { episode, call, client, executing } = await callbackInFlight(sidecar, upstream);
  await injectFaults(upstream, [{ kind: "timeout" }]);
  const hanging = responsesRequest(episode, [{ role: "user", content: "go" }]);
  await waitFor("the second upstream request", async () =>
    (await upstreamRequests(upstream)).length === 2 ? true : undefined,
  );
  return { episode, call, client, executing, hanging };
}

const records = (episode: LaunchInfo, name: string) => join(episode.records_dir, name);

describe("graceful shutdown of the compiled binary", () => {
  test("SIGTERM mid-callback and mid-upstream-request: upstream cancelled, new work 503, callback drained, records frozen, exit 0", async () => {
    const sidecar = await startSidecar(upstream, {
      executor: { kind: "inert", receipt_delay_ms: 700 },
      shutdown: { drain_deadline_ms: 5_000 },
    });
    const { episode, call, executing, hanging } = await workInFlight(sidecar);
    const started = Date.now();
    sidecar.proc.kill("SIGTERM");

    // The exchange waiting on the upstream is cancelled: 503 in the OpenAI envelope, and the upstream saw the abort.
    const cancelled = await hanging;
    expect(cancelled.status).toBe(503);
    expect(JSON.stringify(await cancelled.json())).toContain("shutting down");
    const seen = await waitFor("the upstream to see the abort", async () => {
      const second = (await upstreamRequests(upstream))[1];
      return second?.aborted ? second : undefined;
    });
    expect(seen).toMatchObject({ fault: "timeout", aborted: true, completed: false });

    // While the callback drains, new work is refused with 503 `unavailable`.
    const refused = await responsesRequest(episode, [{ role: "user", content: "go" }]);
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(
      "shutting down",
    );
    expect((await sidecar.control("/episodes", { method: "POST", body: "{}" })).status).toBe(503);
    // The same for the other two protocols, each in its own envelope.
    const messages = await fetch(`${episode.urls.anthropic}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": episode.ingress_key },
      body: JSON.stringify({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "go" }] }),
    });
    // Anthropic's envelope says "unavailable, retry later" as 529 overloaded_error.
    expect(messages.status).toBe(529);
    expect(await messages.json()).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    const gemini = await fetch(`${episode.urls.gemini}/v1beta/models/m:generateContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": episode.ingress_key },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "go" }] }] }),
    });
    expect(gemini.status).toBe(503);
    expect(await gemini.json()).toMatchObject({ error: { status: "UNAVAILABLE" } });
    expect((await upstreamRequests(upstream)).length).toBe(2);

    // The admitted callback was allowed to finish.
    const result = await executing;
    expect(result.isError).toBeFalsy();
    expect(resultText(result)).toContain("nonce");
    expect(await sidecar.proc.exited).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);

    const marker = readJson(records(episode, "frozen.json"));
    expect(marker).toMatchObject({
      drain: "complete",
      complete: true,
      unfinished: [],
      pending_handlers: 0,
      state: "running",
    });
    const ledger = ledgerEvents(episode.records_dir);
    expect(ledger.tornTail).toBeUndefined();
    expect(ledger.entries.filter((e) => e.callId === call.call_id).map((e) => e.type)).toEqual([
      "claimed",
      "submitted",
      "acknowledged",
      "receipt",
    ]);
    expect(sidecar.output()).toContain("shutdown complete");
  });

  test("a callback that outlasts drain_deadline_ms: cleanup failure logged, marker complete:false, exit 3", async () => {
    const sidecar = await startSidecar(upstream, {
      executor: { kind: "inert", receipt_delay_ms: 4_000 },
      shutdown: { drain_deadline_ms: 300 },
    });
    const { episode, call, hanging, executing } = await workInFlight(sidecar);
    // The process exits before the receipt: the callback's connection is reset.
    const orphaned = executing.then(
      () => "answered",
      () => "connection closed",
    );
    sidecar.proc.kill("SIGTERM");
    expect((await hanging).status).toBe(503);
    const code = await sidecar.proc.exited;
    expect(code).toBe(3);
    expect(await orphaned).toBe("connection closed");
    expect((await upstreamRequests(upstream))[1]?.aborted).toBe(true);
    const marker = readJson(records(episode, "frozen.json"));
    expect(marker).toMatchObject({ drain: "deadline_overrun", complete: false, unfinished: [call.call_id] });
    expect(sidecar.output()).toContain("cleanup failure");
    // The journal is readable and honest: the call was acknowledged, no receipt.
    const types = ledgerEvents(episode.records_dir)
      .entries.filter((e) => e.callId === call.call_id)
      .map((e) => e.type);
    expect(types).toEqual(["claimed", "submitted", "acknowledged"]);
  });

  test("a second signal forces the exit without waiting for the drain", async () => {
    const sidecar = await startSidecar(upstream, {
      executor: { kind: "inert", receipt_delay_ms: 10_000 },
      shutdown: { drain_deadline_ms: 20_000 },
    });
    const { episode, executing } = await workInFlight(sidecar);
    executing.catch(() => {});
    const started = Date.now();
    sidecar.proc.kill("SIGTERM");
    await Bun.sleep(150);
    expect(sidecar.proc.exitCode).toBeNull();
    sidecar.proc.kill("SIGINT");
    expect(await sidecar.proc.exited).toBe(130);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(existsSync(records(episode, "frozen.json"))).toBe(false);
    expect(sidecar.output()).toContain("second SIGINT");
  });

  test("POST /control/shutdown: drains, freezes and exits 0", async () => {
    const sidecar = await startSidecar(upstream, { executor: { kind: "inert" } });
    const episode = await sidecar.createEpisode();
    await firstTurn(episode);
    const res = await sidecar.control("/shutdown", { method: "POST" });
    expect(res.status).toBe(202);
    expect(await sidecar.proc.exited).toBe(0);
    expect(readJson(records(episode, "frozen.json"))).toMatchObject({
      reason: "control API",
      complete: true,
    });
    expect(readFileSync(records(episode, "episode.json"), "utf8")).not.toContain(episode.ingress_key);
  });
});
