/**
 * End to end with the real, pinned Codex CLI (`@openai/codex`, OpenAI Responses).
 * Codex declares the robot tools as the namespace `mcp__ura`: Qwen sees them
 * flattened (`mcp__ura__observe`) and Codex gets its calls back as
 * `{namespace, name}`.
 *   1. the smoke episode, run once by `ura-sidecar validate --client codex` (its
 *      kit, every acceptance check), and from its evidence what is Codex's own:
 *      every call claimed by the `_meta.callId` Codex sends (= the call id the
 *      sidecar delivered), the namespace round trip, and Codex's web_search and
 *      multi_agent tools dropped before upstream and recorded as ignored;
 *   2. a failing upstream against the compiled binary (`serve`), Codex launched
 *      through its kit.
 * Everything runs in a loopback-only network namespace when one can be made
 * (test/support/loopback-namespace.ts).
 */
import { expect, test } from "bun:test";
import { runAgainstFailingUpstream } from "../support/client-run.ts";
import {
  deliveredEvents,
  expectClaimedByDeliveredIds,
  expectEveryExchangeDelivered,
} from "../support/episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { validateSmokeEpisode } from "../support/validate-run.ts";

const timeoutMs = 240_000;

type CallItem = { type: string; call_id: string; namespace?: string; name: string };

/** The function-call items the sidecar delivered, in delivery order, from its own records. */
async function deliveredCallItems(recordsDir: string): Promise<CallItem[]> {
  return (await deliveredEvents(recordsDir)).flatMap(({ event, data }) => {
    const item = (data as { item?: CallItem }).item;
    return event === "response.output_item.done" && item?.type === "function_call" ? [item] : [];
  });
}

describeInLoopbackNamespace("Codex end to end", { file: import.meta.path, timeoutMs: 2 * timeoutMs }, () => {
  test(
    "Codex smoke episode (validate): every check, namespace calls, claims by _meta.callId",
    async () => {
      const { recordsDir, upstreamRequests, stdout, status } = await validateSmokeEpisode("codex");

      // The episode kept Codex's own thread id, the one its --json output starts with.
      const threads = stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as { type?: string; thread_id?: string })
        .filter((e) => e.type === "thread.started")
        .map((e) => e.thread_id);
      expect(threads).toHaveLength(1);
      expect(status.client_identity).toMatchObject({ session_ids: threads, session_header: "thread-id" });

      // Every claim used the call id Codex put in `_meta.callId`, and the claimed ids are
      // exactly the function-call ids the sidecar delivered (observe, record, record, finish).
      const items = await deliveredCallItems(recordsDir);
      expectClaimedByDeliveredIds(
        recordsDir,
        items.map((i) => i.call_id),
      );

      // Codex got each robot call as {namespace:"mcp__ura", name} and echoed it so in its history.
      expect(items.map((i) => `${i.namespace}/${i.name}`)).toEqual([
        "mcp__ura/observe",
        "mcp__ura/record",
        "mcp__ura/record",
        "mcp__ura/finish",
      ]);
      // Every exchange (the four agent turns) was delivered.
      const { exchanges, statuses } = expectEveryExchangeDelivered(recordsDir);
      const clientRequests = exchanges.filter((l) => l.stage === "client_request");
      const lastBody = clientRequests.at(-1)?.body as {
        input?: { type: string; namespace?: string; name?: string }[];
      };
      const lastInput = lastBody?.input ?? [];
      expect(
        lastInput.filter((i) => i.type === "function_call").map((i) => `${i.namespace}/${i.name}`),
      ).toEqual(items.map((i) => `${i.namespace}/${i.name}`));

      // Upstream saw the robot tools flattened, and never Codex's web_search or multi_agent_v1 tools.
      expect(upstreamRequests.length).toBeGreaterThan(0);
      for (const request of upstreamRequests as { body: { tools?: { function: { name: string } }[] } }[]) {
        const names = (request.body.tools ?? []).map((t) => t.function.name);
        expect(names).toEqual(
          expect.arrayContaining(["mcp__ura__observe", "mcp__ura__record", "mcp__ura__finish"]),
        );
        expect(names.filter((n) => n.includes("web_search") || n.includes("spawn_agent"))).toEqual([]);
      }
      const ignored = exchanges.find((l) => l.stage === "upstream_request")?.ignored;
      expect(JSON.stringify(ignored)).toContain("built-in tool web_search not offered");
      expect(JSON.stringify(ignored)).toContain("namespace multi_agent_v1");

      expect(stdout).toContain("The episode is complete");
      console.error(`codex smoke episode: ${statuses.length} exchanges`);
    },
    timeoutMs,
  );

  /**
   * Transient upstream trouble: the sidecar's own retries are spent and the episode
   * is in provider_error, so Codex gets a final 400 in the OpenAI envelope at once,
   * before any byte of a stream, and stops without retrying — no further upstream
   * work, no tool call registered.
   */
  test(
    "Codex against a failing upstream: a final 400 at once, then it stops",
    () =>
      runAgainstFailingUpstream("codex", timeoutMs - 30_000, ({ upstream, run, statuses }) => {
        const errors = statuses.map((s) => (s.error as { kind: string; http_status: number }).http_status);
        console.error(`codex stopped ${run.ms} ms after start; statuses ${JSON.stringify(errors)}`);
        expect(errors).toEqual([400]);
        expect(upstream.scripted.received).toHaveLength(3); // the sidecar's own attempts (retry config)
        expect(run.code).not.toBe(0);
      }),
    timeoutMs,
  );
});
