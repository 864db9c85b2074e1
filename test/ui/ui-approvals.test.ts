/**
 * Pending approvals on the /ui episode page, in process: the page lists a call
 * awaiting approval (tool, arguments, digest, waiting time, the latest image the
 * model saw) with Approve and Reject forms; posting them decides the call exactly
 * as the control API does, journaled `by: "ui"`; a stale or repeated decision is
 * shown on the page and changes nothing; nothing without the cookie.
 */
import { describe, expect, test } from "bun:test";
import type { Episode } from "../../src/episodes/episode.ts";
import { cameraLikePng } from "../../src/images/synthetic-frames.ts";
import { argumentsSha256, canonicalArguments } from "../../src/ledger/canonical-arguments.ts";
import { imageTurnRequest } from "../support/image-turn.ts";
import {
  approvalManifest,
  connectMcp,
  deliverBatch,
  readJournal,
  testControlPassword,
  testSidecarsPerTest,
  textOf,
} from "../support/mcp-kit.ts";

const startSidecar = testSidecarsPerTest();

const manifest = approvalManifest();

async function setup() {
  const submitted: string[] = [];
  const sidecar = await startSidecar({
    createExecutor: () => ({
      submit: async (job) => {
        submitted.push(job.callId);
        return { jobId: `job_${job.callId}` };
      },
      receipt: async () => ({ ok: true, content: [{ type: "text", text: "moved" }] }),
    }),
  });
  const login = await sidecar.app.request("/ui/login", {
    method: "POST",
    body: new URLSearchParams({ password: testControlPassword }),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  });
  const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const page = async (id: string) =>
    (await sidecar.app.request(`/ui/episodes/${id}`, { headers: { cookie, accept: "text/html" } })).text();
  const post = (id: string, callId: string, form: Record<string, string>, withCookie = true) =>
    sidecar.app.request(`/ui/episodes/${id}/approvals/${callId}`, {
      method: "POST",
      body: new URLSearchParams(form),
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        accept: "text/html",
        ...(withCookie ? { cookie } : {}),
      },
    });
  const res = await sidecar.app.request("/control/episodes", {
    method: "POST",
    body: JSON.stringify({ manifest }),
    headers: { "content-type": "application/json", authorization: `Bearer ${testControlPassword}` },
  });
  const info = (await res.json()) as { id: string; mcp_token: string; urls: { mcp: string } };
  const episode = sidecar.episodes.get(info.id);
  const { client } = await connectMcp(info.urls.mcp, info.mcp_token);
  return { sidecar, info, episode, client, page, post, submitted, cookie };
}

async function waitForPending(episode: Episode) {
  for (let i = 0; i < 200 && episode.ledger.pendingApprovals().length === 0; i++) await Bun.sleep(5);
}

describe("/ui approvals", () => {
  test("the page shows the pending call with the latest image; Approve runs it once, journaled by ui", async () => {
    const { sidecar, info, episode, client, page, post, submitted, cookie } = await setup();
    // A model turn whose request carries a frame: the latest image the operator sees.
    const png = cameraLikePng(64, 48, 3);
    const turn = await sidecar.app.request(`/e/${info.id}/v1/responses`, {
      method: "POST",
      body: JSON.stringify(imageTurnRequest("what now?", [png.toBase64()])),
      headers: { "content-type": "application/json", authorization: `Bearer ${episode.ingressKey}` },
    });
    expect(turn.status).toBe(200);
    await turn.text();
    deliverBatch(episode, [{ id: "call_m1", tool: "move", args: { x: 3 } }]);
    const result = client.callTool({ name: "move", arguments: { x: 3 } });
    await waitForPending(episode);

    // The episode list points at it.
    const list = await (
      await sidecar.app.request("/ui", { headers: { cookie, accept: "text/html" } })
    ).text();
    expect(list).toContain(`href="/ui/episodes/${info.id}#approvals"`);
    expect(list).toContain("1 awaiting approval");
    const html = await page(info.id);
    expect(html).toContain('data-approval="call_m1"');
    expect(html).toContain("1 call(s) awaiting your approval");
    expect(html).toMatch(/<strong>move<\/strong>/);
    expect(html).toContain("&quot;x&quot;: 3");
    const sha = argumentsSha256(canonicalArguments({ x: 3 }));
    expect(html).toContain(sha);
    expect(html).toMatch(/<figure data-side="latest"><img src="\/ui\/blobs\/[0-9a-f]{64}"/);
    expect(html).toContain('class="waited"');

    // Without the cookie nothing is decided.
    const anonymous = await post(info.id, "call_m1", { decision: "approve", args_sha256: sha }, false);
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get("location")).toBe("/ui/login");
    expect(episode.ledger.pendingApprovals()).toHaveLength(1);

    const approved = await post(info.id, "call_m1", { decision: "approve", args_sha256: sha });
    expect(approved.status).toBe(303);
    expect(approved.headers.get("location")).toBe(`/ui/episodes/${info.id}`);
    expect((await result).isError).toBeFalsy();
    expect(submitted).toEqual(["call_m1"]);
    expect(readJournal(episode).find((e) => e.type === "approved")).toMatchObject({
      callId: "call_m1",
      by: "ui",
    });

    // A second decision from a stale page changes nothing and says why.
    const again = await post(info.id, "call_m1", { decision: "reject", reason: "late", args_sha256: sha });
    const location = again.headers.get("location") ?? "";
    expect(location).toStartWith(`/ui/episodes/${info.id}?approval_error=`);
    const after = await page(`${info.id}${location.slice(location.indexOf("?"))}`);
    expect(after).toContain('class="note failed approval-error"');
    expect(after).toContain("was already approved (ui)");
    expect(after).not.toContain('data-approval="call_m1"');
    expect(readJournal(episode).filter((e) => e.type === "rejected")).toEqual([]);
    await client.close();
  });

  test("Reject needs a reason; the model is told it and nothing runs", async () => {
    const { info, episode, client, post, submitted } = await setup();
    deliverBatch(episode, [{ id: "call_m1", tool: "move", args: { x: 9 } }]);
    const result = client.callTool({ name: "move", arguments: { x: 9 } });
    await waitForPending(episode);
    const sha = argumentsSha256(canonicalArguments({ x: 9 }));
    const noReason = await post(info.id, "call_m1", { decision: "reject", args_sha256: sha });
    expect(decodeURIComponent(noReason.headers.get("location") ?? "")).toContain(
      "a rejection needs a reason",
    );
    const stale = await post(info.id, "call_m1", {
      decision: "approve",
      args_sha256: argumentsSha256(canonicalArguments({ x: 1 })),
    });
    expect(decodeURIComponent(stale.headers.get("location") ?? "")).toContain("refused");
    expect(episode.ledger.pendingApprovals()).toHaveLength(1);
    await post(info.id, "call_m1", { decision: "reject", reason: "past the table edge", args_sha256: sha });
    const answer = await result;
    expect(answer.isError).toBe(true);
    expect(textOf(answer)).toContain("rejected by the operator: past the table edge");
    expect(submitted).toEqual([]);
    expect(readJournal(episode).find((e) => e.type === "rejected")).toMatchObject({
      by: "ui",
      reason: "past the table edge",
    });
    await client.close();
  });
});
