/**
 * End to end with the real, pinned Claude Code (Anthropic Messages):
 *   1. the smoke episode, run once by `ura-sidecar validate --client claude` (its
 *      kit: nonessential traffic, telemetry and auto-update off, own HOME and
 *      CLAUDE_CONFIG_DIR; every acceptance check), and from its evidence what is
 *      Claude Code's own: the calls the sidecar admitted are claimed by the
 *      tool_use ids it delivered (`_meta["claudecode/toolUseId"]`), nothing
 *      provider-only goes upstream, and the final answer reaches the user;
 *   2. a failing upstream against the compiled binary (`serve`): the sidecar's own
 *      retries, then a final 400 (which 2.1.332 retries with fewer features, each
 *      refused at once). Claude Code launched through its kit.
 * Everything runs in a loopback-only network namespace when one can be made
 * (test/support/loopback-namespace.ts), so Claude Code cannot reach any vendor host.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runAgainstFailingUpstream } from "../support/client-run.ts";
import {
  deliveredEvents,
  expectClaimedByDeliveredIds,
  expectEveryExchangeDelivered,
  records,
} from "../support/episode-evidence.ts";
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

type OutputMessage = { type?: string; result?: string; is_error?: boolean; session_id?: string };

/** Claude Code's stream-json output, one message a line. */
function jsonLines(stdout: string): OutputMessage[] {
  return stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as OutputMessage);
}

function resultMessage(stdout: string): OutputMessage | undefined {
  return jsonLines(stdout).find((m) => m.type === "result");
}

describeInLoopbackNamespace(
  "Claude Code end to end",
  { file: import.meta.path, timeoutMs: 2 * timeoutMs },
  () => {
    test(
      "Claude Code smoke episode (validate): every check, claims by the delivered tool_use ids",
      async () => {
        const smoke = await validateSmokeEpisode("claude");
        const { recordsDir, upstreamRequests } = smoke;
        expect(readFileSync(join(smoke.kitDir, "launch"), "utf8")).toContain(
          "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC='1'",
        );

        // Every claim used the tool_use id Claude Code echoed in _meta, and the claimed ids
        // are exactly the tool_use ids the sidecar delivered (observe, record, record, finish).
        const delivered = await deliveredToolUseIds(recordsDir);
        const ledger = expectClaimedByDeliveredIds(recordsDir, delivered);
        const registered = ledger
          .filter((e) => e.type === "registered")
          .flatMap((e) => (e.calls as { id: string }[]).map((c) => c.id));
        expect(registered).toEqual(delivered);

        // Every exchange was a Messages exchange that was delivered; nothing provider-only went upstream.
        const { statuses } = expectEveryExchangeDelivered(recordsDir);
        expect(statuses.length).toBe(4); // → observe, → record ×2, → finish, → text
        expect(upstreamRequests).toHaveLength(4);
        for (const request of upstreamRequests) {
          const wire = JSON.stringify(request.body);
          expect(wire).not.toContain("cache_control");
          expect(wire).not.toContain('thinking":{');
        }

        // The episode kept Claude Code's own session id: the one its output names.
        const sessions = new Set(jsonLines(smoke.stdout).map((m) => m.session_id));
        expect(sessions.size).toBe(1);
        expect(smoke.status.client_identity).toMatchObject({
          session_ids: [...sessions],
          session_header: "x-claude-code-session-id",
        });
        const requestLines = records(recordsDir, "exchanges").filter((l) => l.stage === "client_request");
        expect(requestLines.map((l) => l.client_session)).toEqual(requestLines.map(() => [...sessions][0]));

        // The final answer reached the user.
        const result = resultMessage(smoke.stdout);
        expect(result?.is_error).toBe(false);
        expect(result?.result).toContain("The episode is complete");
      },
      timeoutMs,
    );

    /**
     * Transient upstream trouble: the sidecar's own retries are spent and the episode
     * is in provider_error, so Claude Code gets a final 400 at once (a 529 would only
     * buy a backoff and a retry into that 400) and stops — no further upstream work.
     */
    test(
      "upstream failure: a final 400 at once, no more upstream work",
      () =>
        runAgainstFailingUpstream("claude", timeoutMs - 30_000, ({ upstream, run, status, statuses }) => {
          const errors = statuses.map((s) => s.error as { kind: string; http_status: number });
          console.error(
            `claude stopped ${run.ms} ms after start; errors ${JSON.stringify(errors.map((e) => e.http_status))}`,
          );
          expect(run.kit.plan.env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe("1");
          // 2.1.197 stops at the first 400. 2.1.332 retries a 400 with fewer features (no
          // thinking display, then no tool search: up to five more requests); the failed
          // episode refuses each at once, and none reaches the upstream.
          const [first, ...later] = errors;
          expect(first).toMatchObject({ kind: "upstream_transient", http_status: 400 });
          expect(later.length).toBeLessThanOrEqual(5);
          for (const error of later)
            expect(error).toMatchObject({ kind: "episode_closed", http_status: 400 });
          expect(status.state).toBe("failed");
          // The sidecar's own attempts (retry config: 3), and nothing after the episode failed.
          expect(upstream.scripted.received).toHaveLength(3);
          expect(run.code).not.toBe(0);
          expect(resultMessage(run.stdout)?.is_error).toBe(true);
        }),
      timeoutMs,
    );
  },
);
