/**
 * kill -9 of the compiled binary while a tool call awaits an operator's approval,
 * then a restart on the same data directory: the call is listed as rejected (by
 * the restart), never pending, never uncertain; a replayed callback and a late
 * approval change nothing, and nothing reached the executor. Needs `make build`.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import {
  awaitApprovals,
  callback,
  connectMcp,
  fileUpstream,
  firstTurn,
  type LedgerStatus,
  ledgerEvents,
  movedTo,
  resultText,
  robotManifestWith,
  startSidecar,
} from "../support/lifecycle-kit.ts";

const upstream = await fileUpstream(30_000);

/** The robot manifest with `observe` (the scripted model's first call) held for approval. */
const manifest = robotManifestWith({ observe: { approval: "always" } });

describe("kill -9 while a call awaits approval", () => {
  test("after a restart the call is refused, never runnable; nothing ran", async () => {
    const first = await startSidecar(upstream, { approval_timeout_ms: 60_000 });
    const episode = await first.createEpisode({ client: "codex", manifest });
    const call = await firstTurn(episode);
    const client = await connectMcp(episode.urls.mcp, episode.mcp_token);
    const waiting = callback(client, call).catch(() => undefined);
    const pending = await awaitApprovals(first, episode.id);
    expect(pending.map((p) => p.call_id)).toEqual([call.call_id]);
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    await waiting;

    const second = await startSidecar(upstream, {}, first.dataDir);
    try {
      const status = (await second.episode(episode.id)) as unknown as {
        state: string;
        ledger: LedgerStatus & { awaitingApproval: string[] };
        restart: { uncertain: string[]; restart_file: string };
      };
      expect(status.state).toBe("interrupted");
      expect(status.ledger.awaitingApproval).toEqual([]);
      expect(status.ledger.counts).toMatchObject({ rejected: 1, awaiting_approval: 0, submitted: 0 });
      expect(status.restart.uncertain).toEqual([]);
      const listed = await second.control(`/episodes/${episode.id}/approvals`);
      expect(await listed.json()).toEqual({ approvals: [] });

      // A late approval and a replayed callback from the old client change nothing.
      const late = await second.control(`/episodes/${episode.id}/approvals/${call.call_id}`, {
        method: "POST",
        body: JSON.stringify({ decision: "approve" }),
      });
      expect(late.status).toBe(409);
      expect(await late.text()).toContain("already rejected (restart");
      const moved = movedTo(episode, second);
      const replay = await connectMcp(moved.urls.mcp, moved.mcp_token);
      const replayed = await callback(replay, call);
      expect(replayed.isError).toBe(true);
      expect(resultText(replayed)).toContain("admission is closed");
      await replay.close();

      // The earlier process journaled the wait; the restart journaled the rejection, then the interruption.
      const types = ledgerEvents(episode.records_dir)
        .entries.filter((e) => e.callId === call.call_id)
        .map((e) => e.type);
      expect(types).toEqual(["claimed", "approval_requested"]);
      const restartLedger = readJsonLines<{ type: string; event?: Record<string, unknown> }>(
        join(episode.records_dir, status.restart.restart_file),
      ).entries.flatMap((line) => (line.type === "ledger" && line.event ? [line.event] : []));
      // … and the replayed callback's refusal.
      expect(restartLedger.map((e) => e.type)).toEqual(["rejected", "interrupted", "refused"]);
      expect(restartLedger[0]).toMatchObject({ callId: call.call_id, by: "restart" });
    } finally {
      await second.stopCleanly();
    }
  });
});
