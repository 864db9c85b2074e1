/**
 * Robot work that must not run wrongly, against the compiled binary: the
 * executor's idempotency key is unique across episodes, a submitted finish ends
 * the episode's robot work, and max_turns holds under concurrent requests.
 * Upstream answers are canned so call ids repeat exactly as a non-Qwen server
 * might make them. Needs `make build` (dist/ura-sidecar).
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  callBack,
  cannedUpstreamForFile,
  deliveredCalls,
  exchangesOf,
  hardenedSidecarFor,
  leaveAfter,
  ledgerOf,
  mcpClient,
  responsesTurn,
  stallAfterFirstBytes,
  startHardenedSidecar,
  textOf,
} from "../support/hardening-kit.ts";
import { waitFor } from "../support/lifecycle-kit.ts";
import { serveRecordingExecutor } from "../support/recording-executor.ts";

setDefaultTimeout(30_000);

const upstream = cannedUpstreamForFile();

describe("the executor's idempotency key", () => {
  const controller = serveRecordingExecutor();
  afterAll(() => controller.stop());
  const sidecar = hardenedSidecarFor(upstream, {
    executor: { kind: "http", url: controller.url, poll_wait_ms: 0, retry_delay_ms: 10 },
  });

  test("the same model call id in two episodes is two jobs: each episode gets its own receipt", async () => {
    const episodes = [await sidecar.createEpisode(), await sidecar.createEpisode()];
    const results: string[] = [];
    for (const episode of episodes) {
      upstream.calls({ id: "call_1", name: "ura_observe", arguments: "{}" });
      const [call] = await deliveredCalls(await responsesTurn(episode));
      expect(call?.call_id).toBe("call_1");
      const client = await mcpClient(episode);
      const result = await callBack(client, "observe", {}, "call_1");
      await client.close();
      expect(result.isError).toBeFalsy();
      results.push(textOf(result));
    }
    // A controller following "same key = same job" ran both: two keys, two jobs, two receipts.
    expect(new Set(controller.submits.map((s) => s.key)).size).toBe(2);
    expect(controller.jobs.size).toBe(2);
    for (const [i, episode] of episodes.entries()) expect(results[i]).toContain(`episode ${episode.id}`);
    // The key names the episode and the call, and the body carries it too.
    for (const job of controller.jobs.values()) {
      expect(job.key).toContain(job.body.episode_id);
      expect(job.key).toContain(job.body.call_id);
      expect((job.body as Record<string, unknown>).idempotency_key).toBe(job.key);
    }
  });
});

describe("finish ends the episode's robot work", () => {
  const sidecar = hardenedSidecarFor(upstream, {
    executor: { kind: "inert", ack_delay_ms: 0, receipt_delay_ms: 200 },
  });

  test("a later call of the finish batch and a call of a later exchange never run", async () => {
    const episode = await sidecar.createEpisode();
    upstream.calls(
      { id: "call_finish", name: "ura_finish", arguments: '{"answer":"red"}' },
      { id: "call_rec", name: "ura_record", arguments: '{"nonce":"n1"}' },
    );
    const calls = await deliveredCalls(await responsesTurn(episode));
    expect(calls.map((c) => c.call_id)).toEqual(["call_finish", "call_rec"]);
    const client = await mcpClient(episode);
    const [finish, record] = await Promise.all([
      callBack(client, "finish", { answer: "red" }, "call_finish"),
      callBack(client, "record", { nonce: "n1" }, "call_rec"),
    ]);
    expect(finish.isError).toBeFalsy();
    expect(record.isError).toBe(true);
    expect(textOf(record)).toMatch(/finished/);
    expect((await sidecar.episode(episode.id)).state).toBe("finished");

    // A later exchange's tool call: never runs either.
    upstream.calls({ id: "call_obs", name: "ura_observe", arguments: "{}" });
    const later = await responsesTurn(episode);
    if (later.status === 200) {
      const observe = await callBack(client, "observe", {}, "call_obs");
      expect(observe.isError).toBe(true);
    } else expect(later.status).toBe(400);
    // The client's closing text answer is still served.
    upstream.reply({ kind: "text", text: "The colour was red." });
    expect((await responsesTurn(episode)).status).toBe(200);
    await client.close();

    const submitted = ledgerOf(episode)
      .filter((e) => e.type === "submitted")
      .map((e) => e.callId);
    expect(submitted).toEqual(["call_finish"]);
    expect((await sidecar.episode(episode.id)).state).toBe("finished");
  });
});

describe("max_turns under concurrency", () => {
  const sidecar = hardenedSidecarFor(upstream);

  test("8 concurrent requests with max_turns 2: at most 2 are delivered, at most 2 calls run", async () => {
    upstream.reset();
    const episode = await sidecar.createEpisode({ max_turns: 2 });
    for (let i = 0; i < 8; i++) {
      upstream.reply({
        kind: "slow",
        ms: 300,
        reply: { kind: "calls", calls: [{ id: `call_${i}`, name: "ura_observe", arguments: "{}" }] },
      });
    }
    const answers = await Promise.all(Array.from({ length: 8 }, () => responsesTurn(episode)));
    const delivered = answers.filter((r) => r.status === 200);
    expect(delivered.length).toBe(2);
    for (const refused of answers.filter((r) => r.status !== 200)) {
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain("max_turns");
    }
    const client = await mcpClient(episode);
    let ran = 0;
    for (const res of delivered) {
      for (const call of await deliveredCalls(res)) {
        const result = await callBack(client, "observe", {}, call.call_id);
        if (!result.isError) ran++;
      }
    }
    await client.close();
    expect(ran).toBe(2);
    expect(upstream.received.length).toBeLessThanOrEqual(2);
    expect((await sidecar.episode(episode.id)).counters.delivered_exchanges).toBe(2);
  });
});

describe("delivery and the client that leaves", () => {
  const sidecar = hardenedSidecarFor(upstream);

  test("a client that closes before any byte of the answer arrived never gets its calls run", async () => {
    let trials = 0;
    for (let i = 0; i < 12; i++) {
      upstream.reset();
      const episode = await sidecar.createEpisode();
      upstream.reply({
        kind: "slow",
        ms: 20,
        reply: { kind: "calls", calls: [{ id: `call_leave_${i}`, name: "ura_observe", arguments: "{}" }] },
      });
      // Closing around the moment the upstream answers: before, during or after the sidecar's records work.
      const { received, closedAt } = await leaveAfter(episode, 15 + (i % 6) * 3);
      if (received > 0) continue;
      // Bytes the kernel took before the close are delivered by definition (docs/design.md), even if
      // the client never read them: only a delivery confirmed after the close could be seen is a fault.
      // The exchange's outcome, however long a loaded machine takes to settle it.
      const status = await waitFor(
        `the exchange of episode ${episode.id} to settle`,
        () => exchangesOf(episode).find((l) => l.stage === "status"),
        10_000,
      );
      if (status?.status === "delivered" && Date.parse(String(status.at)) <= closedAt + 5) continue;
      trials += 1;
      const client = await mcpClient(episode);
      const result = await callBack(client, "observe", {}, `call_leave_${i}`);
      await client.close();
      expect(result.isError).toBe(true);
      expect(ledgerOf(episode).filter((e) => e.type === "delivered")).toEqual([]);
    }
    expect(trials).toBeGreaterThan(0);
  });
});

describe("shutdown during a delivery", () => {
  test("SIGTERM while the client still reads a large answer: drain overrun (exit 3, complete:false), batch revoked, status recorded", async () => {
    const sidecar = await startHardenedSidecar(upstream, { shutdown: { drain_deadline_ms: 1500 } });
    const episode = await sidecar.createEpisode();
    upstream.reset();
    upstream.calls({
      id: "call_big",
      name: "ura_record",
      arguments: JSON.stringify({ nonce: "q".repeat(16 * 1024 * 1024) }),
    });
    const client = await stallAfterFirstBytes(episode);
    expect(client.first).toStartWith("HTTP/1.1 200");
    const code = await sidecar.stop("SIGTERM");
    client.close();
    expect(code).toBe(3);
    const frozen = JSON.parse(readFileSync(join(episode.records_dir, "frozen.json"), "utf8"));
    expect(frozen).toMatchObject({ complete: false });
    const ledger = ledgerOf(episode).map((e) => e.type);
    expect(ledger).toContain("registered");
    expect(ledger).toContain("revoked");
    expect(exchangesOf(episode).find((l) => l.stage === "status")).toMatchObject({ status: "revoked" });
    expect(sidecar.output()).not.toMatch(/SidecarError|uncaught/i);
  });
});

describe("batch order for clients that send no call id", () => {
  const sidecar = hardenedSidecarFor(upstream, {
    executor: { kind: "inert", ack_delay_ms: 150, receipt_delay_ms: 0 },
  });

  test("an earlier batch's unrun record(n) does not let the newest batch's record(n) jump its observe", async () => {
    upstream.reset();
    const episode = await sidecar.createEpisode();
    upstream.calls({ id: "call_orphan", name: "ura_record", arguments: '{"nonce":"n"}' });
    await deliveredCalls(await responsesTurn(episode)); // the client never runs it
    upstream.calls(
      { id: "call_obs", name: "ura_observe", arguments: "{}" },
      { id: "call_rec", name: "ura_record", arguments: '{"nonce":"n"}' },
    );
    await deliveredCalls(await responsesTurn(episode));
    const client = await mcpClient(episode);
    // Gemini-style: both calls of the batch at once, no call id.
    await Promise.all([callBack(client, "observe", {}), callBack(client, "record", { nonce: "n" })]);
    await client.close();
    const journal = ledgerOf(episode);
    const claimed = journal.filter((e) => e.type === "claimed").map((e) => e.callId);
    expect(claimed.sort()).toEqual(["call_obs", "call_rec"]);
    const submitted = journal.filter((e) => e.type === "submitted").map((e) => e.callId);
    expect(submitted).toEqual(["call_obs", "call_rec"]);
  });
});
