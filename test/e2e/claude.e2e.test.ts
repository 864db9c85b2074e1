/**
 * End to end with the real, pinned Claude Code (Anthropic Messages):
 *   1. the smoke episode, run once by `ura-sidecar validate --client claude` (its
 *      kit: nonessential traffic, telemetry and auto-update off, own HOME and
 *      CLAUDE_CONFIG_DIR; every acceptance check), and from its evidence what is
 *      Claude Code's own: the calls the sidecar admitted are claimed by the
 *      tool_use ids it delivered (`_meta["claudecode/toolUseId"]`), nothing
 *      provider-only goes upstream, and the final answer reaches the user;
 *   2. a failing upstream against the compiled binary (`serve`): 529, one client
 *      retry, a final 400. Claude Code launched through its kit.
 * Everything runs in a loopback-only network namespace when one can be made
 * (test/support/loopback-namespace.ts), so Claude Code cannot reach any vendor host.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  deliveredEvents,
  failEveryUpstreamRequest,
  records,
  runClient,
  withServedSidecar,
} from "../support/client-run.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { validateSmokeEpisode } from "../support/validate-run.ts";

const timeoutMs = 240_000;

/** The tool_use ids the sidecar delivered to Claude Code, in delivery order, from its own records. */
async function deliveredToolUseIds(recordsDir: string): Promise<string[]> {
  return (await deliveredEvents(recordsDir)).flatMap(({ event, data }) => {
    const block = (data as { content_block?: { type: string; id: string } }).content_block;
    return event === "content_block_start" && block?.type === "tool_use" ? [block.id] : [];
  });
}

function resultMessage(stdout: string): { type?: string; result?: string; is_error?: boolean } | undefined {
  return stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { type?: string; result?: string; is_error?: boolean })
    .find((m) => m.type === "result");
}

describeInLoopbackNamespace(
  "Claude Code end to end",
  { file: import.meta.path, timeoutMs: 2 * timeoutMs },
  () => {
    test(
      "Claude Code smoke episode (validate): every check, claims by the delivered tool_use ids",
      async () => {
        const smoke = await validateSmokeEpisode("claude");
        const { status, recordsDir, upstreamRequests } = smoke;
        expect(readFileSync(join(smoke.kitDir, "launch"), "utf8")).toContain(
          "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC='1'",
        );

        // Claude Code spoke MCP to the episode's `ura` server.
        expect(status.mcp).toMatchObject({ initialized: true, tools_listed: true });

        // Every claim used the tool_use id Claude Code echoed in _meta, and the claimed ids
        // are exactly the tool_use ids the sidecar delivered (observe, record, record, finish).
        const ledger = records(recordsDir, "ledger");
        const claimed = ledger.filter((e) => e.type === "claimed");
        expect(claimed.map((e) => e.by)).toEqual(["call_id", "call_id", "call_id", "call_id"]);
        const delivered = await deliveredToolUseIds(recordsDir);
        expect(delivered).toHaveLength(4);
        expect(claimed.map((e) => e.callId)).toEqual(delivered);
        const registered = ledger
          .filter((e) => e.type === "registered")
          .flatMap((e) => (e.calls as { id: string }[]).map((c) => c.id));
        expect(registered).toEqual(delivered);
        expect(ledger.filter((e) => e.type === "refused")).toEqual([]);

        // Every exchange was a Messages exchange that was delivered; nothing provider-only went upstream.
        const statuses = records(recordsDir, "exchanges").filter((l) => l.stage === "status");
        expect(statuses.map((s) => s.status)).toEqual(statuses.map(() => "delivered"));
        expect(statuses.length).toBe(4); // → observe, → record ×2, → finish, → text
        expect(upstreamRequests).toHaveLength(4);
        for (const request of upstreamRequests) {
          const wire = JSON.stringify(request.body);
          expect(wire).not.toContain("cache_control");
          expect(wire).not.toContain('thinking":{');
        }

        // The final answer reached the user.
        const result = resultMessage(smoke.stdout);
        expect(result?.is_error).toBe(false);
        expect(result?.result).toContain("The episode is complete");
      },
      timeoutMs,
    );

    /**
     * Transient upstream trouble: the sidecar's own retries are spent, Claude Code gets
     * 529 overloaded_error and retries; the episode is already in provider_error, so
     * the retry gets a final 400 and Claude Code stops — no further upstream work.
     */
    test(
      "upstream failure: 529, one client retry, a final 400, no more upstream work",
      () =>
        withServedSidecar("claude", async ({ upstream, sidecar }) => {
          const episode = await sidecar.createEpisode({ client: "claude" });
          failEveryUpstreamRequest(upstream);
          const run = await runClient("claude", sidecar, episode, { timeoutMs: timeoutMs - 30_000 });
          expect(run.kit.plan.env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe("1");
          const statuses = records(episode.records_dir, "exchanges").filter((l) => l.stage === "status");
          const errors = statuses.map((s) => (s.error as { kind: string; http_status: number }).kind);
          if (errors[0] !== "upstream_transient") console.error(run.context);
          expect(errors).toEqual(["upstream_transient", "episode_closed"]);
          const status = await sidecar.episode(episode.id);
          expect(status.state).toBe("failed");
          expect(status.failure).toMatchObject({ reason: "provider_error" });
          // The sidecar's own attempts (retry config: 3), and nothing after the episode failed.
          expect(upstream.scripted.received).toHaveLength(3);
          expect(run.code).not.toBe(0);
          expect(resultMessage(run.stdout)?.is_error).toBe(true);
          expect(records(episode.records_dir, "ledger").filter((e) => e.type === "registered")).toEqual([]);
          console.error(`claude stopped ${run.ms} ms after start, after 1 retry of the 529`);
        }),
      timeoutMs,
    );
  },
);
