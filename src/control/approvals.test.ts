/**
 * Operator approval over the control API, end to end in process: a real MCP client
 * calls a tool whose manifest asks for approval, the call is listed as pending with
 * its arguments' SHA-256, and the decision — approve, reject, none in time — decides
 * whether the executor ever sees it. Plus rate limits and bad manifest policies.
 */
import { describe, expect, test } from "bun:test";
import {
  approvalManifest,
  connectMcp,
  deliverBatch,
  readJournal,
  testControlPassword,
  testSidecarsPerTest,
  textOf,
} from "../../test/support/mcp-kit.ts";
import type { ExecutorJob } from "../executor/executor.ts";
import { argumentsSha256, canonicalArguments } from "../ledger/canonical-arguments.ts";

const startSidecar = testSidecarsPerTest();

const moveManifest = approvalManifest;

async function setup(config: Record<string, unknown> = {}) {
  const submitted: ExecutorJob[] = [];
  const sidecar = await startSidecar({
    config,
    createExecutor: () => ({
      submit: async (job) => {
        submitted.push(job);
        return { jobId: `job_${job.callId}` };
      },
      receipt: async () => ({ ok: true, content: [{ type: "text", text: "moved" }] }),
    }),
  });
  const control = (path: string, init: RequestInit = {}) =>
    sidecar.app.request(`/control${path}`, {
      ...init,
      headers: { "content-type": "application/json", authorization: `Bearer ${testControlPassword}` },
    });
  const create = async (manifest: unknown) => {
    const res = await control("/episodes", { method: "POST", body: JSON.stringify({ manifest }) });
    expect(res.status).toBe(201);
    const info = (await res.json()) as { id: string; mcp_token: string; urls: { mcp: string } };
    const { client, transport } = await connectMcp(info.urls.mcp, info.mcp_token);
    return { info, client, transport, episode: sidecar.episodes.get(info.id) };
  };
  const pending = async (id: string) =>
    (
      (await (await control(`/episodes/${id}/approvals`)).json()) as {
        approvals: {
          call_id: string;
          tool: string;
          arguments: unknown;
          args_sha256: string;
          waited_ms: number;
        }[];
      }
    ).approvals;
  const waitForPending = async (id: string) => {
    for (let i = 0; i < 200; i++) {
      const list = await pending(id);
      if (list.length > 0) return list;
      await Bun.sleep(5);
    }
    throw new Error("no call became pending");
  };
  const decide = (id: string, callId: string, body: unknown) =>
    control(`/episodes/${id}/approvals/${callId}`, { method: "POST", body: JSON.stringify(body) });
  return { sidecar, control, create, pending, waitForPending, decide, submitted };
}

const sha = (args: unknown) => argumentsSha256(canonicalArguments(args));

describe("approval over the control API", () => {
  test("approved: the call is listed with its arguments and digest, then runs once; the launch info waits for it", async () => {
    const { create, waitForPending, decide, submitted, pending } = await setup({
      approval_timeout_ms: 60_000,
    });
    const { info, client, episode } = await create(moveManifest());
    expect((info as unknown as { tool_call_timeout_ms: number }).tool_call_timeout_ms).toBeGreaterThan(
      60_000 + 75_000,
    );
    deliverBatch(episode, [{ id: "call_m1", tool: "move", args: { x: 3 } }]);
    const result = client.callTool({ name: "move", arguments: { x: 3 } });
    const [listed] = await waitForPending(info.id);
    expect(listed).toMatchObject({
      call_id: "call_m1",
      tool: "move",
      arguments: { x: 3 },
      args_sha256: sha({ x: 3 }),
    });
    expect(submitted).toEqual([]);
    const res = await decide(info.id, "call_m1", { decision: "approve", args_sha256: listed?.args_sha256 });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      call_id: "call_m1",
      decision: "approve",
      status: "approved",
      by: "api",
    });
    const answer = await result;
    expect(answer.isError).toBeFalsy();
    expect(textOf(answer)).toBe("moved");
    expect(submitted.map((job) => job.callId)).toEqual(["call_m1"]);
    expect(await pending(info.id)).toEqual([]);
    // A second decision for a decided call is refused and changes nothing.
    const again = await decide(info.id, "call_m1", { decision: "reject", reason: "wait" });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { message: string } }).error.message).toContain(
      "already approved",
    );
    expect(
      readJournal(episode)
        .filter((e) => e.callId === "call_m1")
        .map((e) => e.type),
    ).toEqual(["claimed", "approval_requested", "approved", "submitted", "acknowledged", "receipt"]);
    await client.close();
  });

  test("rejected: the model gets a tool error with the operator's reason; nothing reached the executor", async () => {
    const { create, waitForPending, decide, submitted } = await setup();
    const { info, client, episode } = await create(moveManifest());
    deliverBatch(episode, [{ id: "call_m1", tool: "move", args: { x: 9 } }]);
    const result = client.callTool({ name: "move", arguments: { x: 9 } });
    await waitForPending(info.id);
    // A reason is required, and a digest of other arguments is refused.
    expect((await decide(info.id, "call_m1", { decision: "reject" })).status).toBe(400);
    const wrong = await decide(info.id, "call_m1", { decision: "approve", args_sha256: sha({ x: 1 }) });
    expect(wrong.status).toBe(409);
    expect(((await wrong.json()) as { error: { param: string } }).error.param).toBe("args_sha256");
    expect(
      (await decide(info.id, "call_m1", { decision: "reject", reason: "x=9 is past the table edge" })).status,
    ).toBe(200);
    const answer = await result;
    expect(answer.isError).toBe(true);
    expect(textOf(answer)).toContain("rejected by the operator: x=9 is past the table edge");
    expect(submitted).toEqual([]);
    expect(readJournal(episode).find((e) => e.type === "rejected")).toMatchObject({
      callId: "call_m1",
      by: "api",
      argsSha256: sha({ x: 9 }),
    });
    await client.close();
  });

  test("no decision within approval_timeout_ms: a tool error, nothing ran, and a late approval does nothing", async () => {
    const { create, decide, submitted, control, sidecar } = await setup({ approval_timeout_ms: 50 });
    const { info, client, episode } = await create(moveManifest());
    deliverBatch(episode, [{ id: "call_m1", tool: "move", args: { x: 1 } }]);
    const answer = await client.callTool({ name: "move", arguments: { x: 1 } });
    expect(answer.isError).toBe(true);
    expect(textOf(answer)).toContain("rejected by the operator: no decision within 50 ms");
    const late = await decide(info.id, "call_m1", { decision: "approve" });
    expect(late.status).toBe(409);
    expect(submitted).toEqual([]);
    const metrics = await (
      await sidecar.app.request("/metrics", {
        headers: { authorization: `Bearer ${testControlPassword}` },
      })
    ).text();
    expect(metrics).toContain('ura_tool_calls_total{tool="move",outcome="approval_requested"} 1');
    expect(metrics).toContain('ura_tool_calls_total{tool="move",outcome="rejected"} 1');
    const status = (await (await control(`/episodes/${info.id}`)).json()) as {
      ledger: { counts: Record<string, number> };
    };
    expect(status.ledger.counts).toMatchObject({ rejected: 1, submitted: 0 });
    await client.close();
  });

  test("while it waits, progress notifications say so and keep a client's timeout alive", async () => {
    const { create, waitForPending, decide, submitted } = await setup({ mcp_progress_interval_ms: 40 });
    const { info, client, episode } = await create(moveManifest());
    deliverBatch(episode, [{ id: "call_m1", tool: "move", args: { x: 3 } }]);
    const messages: string[] = [];
    const result = client.callTool({ name: "move", arguments: { x: 3 } }, undefined, {
      // Without the notifications this call would time out at 200 ms; the decision comes after 500.
      timeout: 200,
      resetTimeoutOnProgress: true,
      onprogress: (progress) => messages.push(progress.message ?? ""),
    });
    await waitForPending(info.id);
    await Bun.sleep(500);
    await decide(info.id, "call_m1", { decision: "approve" });
    expect((await result).isError).toBeFalsy();
    expect(submitted).toHaveLength(1);
    const waiting = messages.filter((m) => m.startsWith("awaiting an operator's approval"));
    expect(waiting.length).toBeGreaterThanOrEqual(5);
    await client.close();
  });

  test("a client that withdraws the call (cancels it) while it awaits approval: rejected by client, never runs", async () => {
    const { create, waitForPending, decide, submitted, pending } = await setup();
    const { info, client, episode } = await create(moveManifest());
    deliverBatch(episode, [{ id: "call_m1", tool: "move", args: { x: 3 } }]);
    const gaveUp = new AbortController();
    // The SDK sends notifications/cancelled for the request when its signal aborts (as on its own timeout).
    const result = client.callTool({ name: "move", arguments: { x: 3 } }, undefined, {
      signal: gaveUp.signal,
    });
    await waitForPending(info.id);
    gaveUp.abort("the user pressed Esc");
    await result.catch(() => undefined);
    for (let i = 0; i < 100 && (await pending(info.id)).length > 0; i++) await Bun.sleep(5);
    expect(await pending(info.id)).toEqual([]);
    expect(readJournal(episode).at(-1)).toMatchObject({ type: "rejected", callId: "call_m1", by: "client" });
    const late = await decide(info.id, "call_m1", { decision: "approve" });
    expect(late.status).toBe(409);
    expect(submitted).toEqual([]);
    await client.close();
  });

  for (const how of ["its session is closed (DELETE)", "its connection goes away"] as const) {
    test(`a client whose ${how.replace("its ", "")} while its call awaits approval withdraws it: never runs`, async () => {
      const { create, waitForPending, submitted, pending } = await setup();
      const { info, client, transport, episode } = await create(moveManifest());
      deliverBatch(episode, [{ id: "call_m1", tool: "move", args: { x: 3 } }]);
      const result = client.callTool({ name: "move", arguments: { x: 3 } }).catch(() => undefined);
      await waitForPending(info.id);
      if (how === "its session is closed (DELETE)") await transport.terminateSession();
      await client.close(); // aborts the client's requests: their connections close
      await result;
      for (let i = 0; i < 100 && (await pending(info.id)).length > 0; i++) await Bun.sleep(5);
      expect(await pending(info.id)).toEqual([]);
      expect(readJournal(episode).at(-1)).toMatchObject({
        type: "rejected",
        callId: "call_m1",
        by: "client",
      });
      expect(submitted).toEqual([]);
    });
  }

  test("arguments that fail the input schema are refused before any operator is asked", async () => {
    const { create, submitted, pending } = await setup();
    const { info, client, episode } = await create(moveManifest());
    deliverBatch(episode, [{ id: "call_bad", tool: "move", args: { x: "far" } }]);
    const answer = await client.callTool({ name: "move", arguments: { x: "far" } });
    expect(answer.isError).toBe(true);
    expect(textOf(answer)).toContain("arguments do not match the input schema of move");
    expect(await pending(info.id)).toEqual([]);
    expect(
      readJournal(episode)
        .filter((e) => e.callId === "call_bad")
        .map((e) => e.type),
    ).toEqual(["claimed", "failed"]);
    expect(submitted).toEqual([]);
    await client.close();
  });

  test("a condition: only arguments that match it ask; others run at once", async () => {
    const { create, waitForPending, decide, submitted } = await setup();
    const condition = { when: { properties: { x: { minimum: 5 } }, required: ["x"] } };
    const { info, client, episode } = await create(moveManifest(condition));
    deliverBatch(episode, [{ id: "near", tool: "move", args: { x: 1 } }]);
    expect((await client.callTool({ name: "move", arguments: { x: 1 } })).isError).toBeFalsy();
    deliverBatch(episode, [{ id: "far", tool: "move", args: { x: 7 } }]);
    const far = client.callTool({ name: "move", arguments: { x: 7 } });
    const [listed] = await waitForPending(info.id);
    expect(listed?.call_id).toBe("far");
    await decide(info.id, "far", { decision: "approve" });
    expect((await far).isError).toBeFalsy();
    expect(submitted.map((j) => j.callId)).toEqual(["near", "far"]);
    await client.close();
  });

  test("rate limit: a call over it gets a tool error naming the limit; nothing runs", async () => {
    const { create, submitted, sidecar } = await setup();
    const { client, episode } = await create(moveManifest("never", { per_minute: 1 }));
    deliverBatch(episode, [{ id: "a", tool: "move", args: { x: 1 } }]);
    expect((await client.callTool({ name: "move", arguments: { x: 1 } })).isError).toBeFalsy();
    deliverBatch(episode, [{ id: "b", tool: "move", args: { x: 2 } }]);
    const over = await client.callTool({ name: "move", arguments: { x: 2 } });
    expect(over.isError).toBe(true);
    expect(textOf(over)).toContain("rate limit of move: at most 1 call(s) per minute (rate.per_minute)");
    expect(submitted.map((j) => j.callId)).toEqual(["a"]);
    expect(readJournal(episode).at(-1)).toMatchObject({
      type: "rate_limited",
      callId: "b",
      limit: "per_minute",
    });
    expect(episode.counters.tool_calls_refused).toBe(1);
    expect(sidecar.episodes.get(episode.id).describe().ledger.counts).toMatchObject({ rate_limited: 1 });
    // Counted in the metrics, by tool.
    const metrics = await (
      await sidecar.app.request("/metrics", { headers: { authorization: `Bearer ${testControlPassword}` } })
    ).text();
    expect(metrics).toContain('ura_tool_calls_total{tool="move",outcome="rate_limited"} 1');
    await client.close();
  });

  test("a bad policy is a 400 naming manifest.tools[i].approval or .rate", async () => {
    const { control } = await setup();
    for (const [manifest, param] of [
      [moveManifest("sometimes"), "manifest.tools[0].approval"],
      [moveManifest({ when: { type: "no-such-type" } }), "manifest.tools[0].approval"],
      [moveManifest({ when: { $ref: "http://example.com/x" } }), "manifest.tools[0].approval"],
      [moveManifest("always", {}), "manifest.tools[0].rate"],
      [moveManifest("always", { per_minute: 0 }), "manifest.tools[0].rate.per_minute"],
    ] as const) {
      const res = await control("/episodes", { method: "POST", body: JSON.stringify({ manifest }) });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { type: string; param: string } };
      expect(body.error).toMatchObject({ type: "invalid_request", param });
    }
  });

  test("decisions need the control password; unknown episodes and calls are 404", async () => {
    const { create, sidecar, decide } = await setup();
    const { info, client } = await create(moveManifest());
    for (const [path, method] of [
      [`/control/episodes/${info.id}/approvals`, "GET"],
      [`/control/episodes/${info.id}/approvals/x`, "POST"],
    ] as const) {
      expect((await sidecar.app.request(path, { method })).status).toBe(401);
    }
    expect((await decide(info.id, "no_such_call", { decision: "approve" })).status).toBe(404);
    expect((await decide("ep_0000000000000000", "x", { decision: "approve" })).status).toBe(404);
    await client.close();
  });
});
