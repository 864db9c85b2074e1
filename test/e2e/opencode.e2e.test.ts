/**
 * End to end with the real, pinned OpenCode (`opencode-ai`, OpenAI Responses via
 * `@ai-sdk/openai`):
 *   1. the smoke episode, run once by `ura-sidecar validate --client opencode`
 *      (its kit, the call-id plugin of manifests/opencode/, every acceptance
 *      check), and from its evidence what is OpenCode's own: every call claimed
 *      by the `_callID` the plugin adds to the MCP arguments (= the call id the
 *      sidecar delivered), and `_callID` never reaching the model;
 *   2. a failing upstream against the compiled binary (`serve`), OpenCode
 *      launched through its kit.
 * Everything runs in a loopback-only network namespace when one can be made
 * (test/support/loopback-namespace.ts).
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { runAgainstFailingUpstream } from "../support/client-run.ts";
import {
  deliveredEvents,
  expectClaimedByDeliveredIds,
  expectEveryExchangeDelivered,
  records,
} from "../support/episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { validateSmokeEpisode } from "../support/validate-run.ts";

const repoRoot = resolve(import.meta.dir, "../..");
const timeoutMs = 240_000;

/** The function-call ids the sidecar delivered, in delivery order, from its own records. */
async function deliveredCallIds(recordsDir: string): Promise<string[]> {
  return (await deliveredEvents(recordsDir)).flatMap(({ event, data }) => {
    const item = (data as { item?: { type: string; call_id: string } }).item;
    return event === "response.output_item.done" && item?.type === "function_call" ? [item.call_id] : [];
  });
}

describeInLoopbackNamespace(
  "OpenCode end to end",
  { file: import.meta.path, timeoutMs: 2 * timeoutMs },
  () => {
    test(
      "OpenCode smoke episode (validate): every check, claims by the plugin's _callID, no _callID in history",
      async () => {
        const smoke = await validateSmokeEpisode("opencode");
        const { recordsDir, upstreamRequests } = smoke;

        // The kit loads the call-id plugin: a copy of manifests/opencode/ura-call-id.ts.
        const config = JSON.parse(readFileSync(join(smoke.kitDir, "opencode.json"), "utf8")) as {
          plugin: string[];
        };
        const pluginFile = join(smoke.kitDir, "plugins/ura-call-id.ts");
        expect(config.plugin).toEqual([`file://${pluginFile}`]);
        expect(readFileSync(pluginFile, "utf8")).toBe(
          readFileSync(resolve(repoRoot, "manifests/opencode/ura-call-id.ts"), "utf8"),
        );

        // Every claim used the `_callID` the plugin put into the MCP arguments, and the claimed
        // ids are exactly the function-call ids the sidecar delivered (observe, record, record, finish).
        expectClaimedByDeliveredIds(recordsDir, await deliveredCallIds(recordsDir));

        // The model-visible history never carries `_callID`: not in what OpenCode sent us, not upstream.
        const clientRequests = records(recordsDir, "exchanges").filter((l) => l.stage === "client_request");
        expect(clientRequests.length).toBeGreaterThanOrEqual(5);
        for (const request of clientRequests) expect(JSON.stringify(request.body)).not.toContain("_callID");
        expect(upstreamRequests.length).toBeGreaterThanOrEqual(5);
        for (const request of upstreamRequests) expect(JSON.stringify(request.body)).not.toContain("_callID");

        // Only the robot tools were offered (permission "*": deny), under OpenCode's names.
        const toolNames = (upstreamRequests as { body: { tools?: { function: { name: string } }[] } }[])
          .flatMap((r) => r.body.tools ?? [])
          .map((t) => t.function.name);
        expect(new Set(toolNames)).toEqual(new Set(["ura_observe", "ura_record", "ura_finish"]));

        // The episode kept OpenCode's own session id, the one its JSON events name.
        const sessions = new Set(
          smoke.stdout
            .split("\n")
            .filter((l) => l.startsWith("{"))
            .map((l) => (JSON.parse(l) as { sessionID?: string }).sessionID),
        );
        expect(sessions.size).toBe(1);
        expect(smoke.status.client_identity).toMatchObject({
          session_ids: [...sessions],
          session_header: "x-session-id",
        });

        // Every exchange (the title request and the four agent turns) was delivered.
        const { statuses } = expectEveryExchangeDelivered(recordsDir);
        expect(smoke.stdout).toContain("The episode is complete");
        console.error(`opencode smoke episode: ${statuses.length} exchanges`);
      },
      timeoutMs,
    );

    /**
     * Transient upstream trouble: the sidecar's own retries are spent and the episode
     * is in provider_error, so OpenCode gets a final 400 in the OpenAI envelope at
     * once, before any byte of a stream, and stops — no tool call registered. (The
     * title request runs concurrently, so it may be the one that meets the failing
     * upstream first, and the agent turn then meets the closed episode.) OpenCode
     * retries even a 400 whose text looks transient ("…HTTP 503…"): see
     * src/ingress/responses/errors.ts.
     */
    test(
      "OpenCode against a failing upstream: a final 400 at once, then it stops",
      () =>
        runAgainstFailingUpstream("opencode", timeoutMs - 30_000, ({ upstream, run, statuses }) => {
          const httpStatuses = statuses.map(
            (s) => (s.error as { http_status: number } | undefined)?.http_status,
          );
          console.error(
            `opencode stopped ${run.ms} ms after start (exit ${run.code}); statuses ${JSON.stringify(httpStatuses)}; ${run.stdout.length} bytes of output`,
          );
          expect(httpStatuses.length).toBeGreaterThan(0);
          expect(httpStatuses.every((s) => s === 400)).toBe(true);
          // The title request and the agent turn, each answered once: nothing was retried.
          expect(httpStatuses.length).toBeLessThanOrEqual(2);
          expect(upstream.scripted.received.length).toBeLessThanOrEqual(6); // the sidecar's own attempts only
        }),
      timeoutMs,
    );
  },
);
