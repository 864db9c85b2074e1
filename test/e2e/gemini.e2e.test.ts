/**
 * End to end with the real, pinned Gemini CLI (Gemini GenerateContent):
 *   1. the smoke episode (observe → two identical records in one batch → finish
 *      with the colour → text), run once by `ura-sidecar validate --client gemini`
 *      (its kit, every acceptance check), and from its evidence what is Gemini
 *      CLI's own: its countTokens request got the local 400 and did not count as
 *      a turn;
 *   2. against the compiled binary (`serve`), an episode whose CLI names another
 *      model: the episode goes to provider_error and no upstream request is made.
 *      Gemini CLI launched through its kit;
 *   3. against an upstream that keeps failing: the sidecar's own retries are spent,
 *      the episode is in provider_error, and Gemini CLI gets a final 400 at once
 *      and stops without retrying.
 * Everything runs in a loopback-only network namespace when one can be made
 * (test/support/loopback-namespace.ts), so nothing the CLI does can leave the machine.
 */
import { expect, test } from "bun:test";
import { runAgainstFailingUpstream, runClient, withServedSidecar } from "../support/client-run.ts";
import { records } from "../support/episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { validateSmokeEpisode } from "../support/validate-run.ts";

const cliTimeoutMs = 180_000;

describeInLoopbackNamespace(
  "Gemini CLI end to end",
  { file: import.meta.path, timeoutMs: 3 * cliTimeoutMs + 60_000 },
  () => {
    test(
      "smoke episode (validate): every check passes; countTokens got the local 400 and was not a turn",
      async () => {
        const { status, recordsDir, upstreamRequests, sidecarLog } = await validateSmokeEpisode("gemini");
        const model = (status as typeof status & { model: string }).model;

        // countTokens: answered locally with a 400, recorded as auxiliary, never an exchange or a turn.
        const auxiliary = records(recordsDir, "auxiliary");
        const countTokens = auxiliary.filter((a) => a.operation === "countTokens");
        expect(countTokens.length).toBeGreaterThan(0);
        for (const a of countTokens) {
          expect(a.status).toBe(400);
          expect(String(a.path)).toEndWith(`/v1beta/models/${model}:countTokens`);
        }
        expect(status.counters.auxiliary_responses).toBe(auxiliary.length);
        const requests = records(recordsDir, "exchanges").filter((e) => e.stage === "client_request");
        expect(requests.every((e) => !String(e.path).includes("countTokens"))).toBe(true);
        // observe, records, finish, final text: four delivered turns, no failures, each one upstream request.
        expect(status.counters.delivered_exchanges).toBe(4);
        expect(status.counters.failed_exchanges).toBe(0);
        expect(upstreamRequests).toHaveLength(4);
        expect(sidecarLog).toContain(":countTokens");
        // Gemini CLI (API key) sends no session id of its own: none is kept, none made up.
        expect(status.client_identity).toMatchObject({ session_ids: [], session_header: null });
      },
      cliTimeoutMs + 30_000,
    );

    test(
      "a request naming another model puts the episode in provider_error with no upstream request",
      () =>
        withServedSidecar("gemini", async ({ upstream, sidecar }) => {
          const info = await sidecar.createEpisode({ client: "gemini" });
          // Not a gemini-3-* name: those make the CLI drop images (docs/clients.md).
          const run = await runClient("gemini", sidecar, info, {
            timeoutMs: cliTimeoutMs,
            model: "gemini-2.5-flash",
          });
          const status = await sidecar.episode(info.id);
          console.log(
            `other model: gemini exit ${run.code}; episode ${status.state} ${JSON.stringify(status.failure)}`,
          );
          expect(upstream.scripted.received.length).toBe(0);
          expect(status.state).toBe("failed");
          expect(status.failure).toMatchObject({ reason: "provider_error" });
          // The model the client asked for, named (0.59 and 0.60 send gemini-3.5-flash for -m
          // gemini-2.5-flash: the CLI maps the name itself; 0.61 sends it as given).
          const asked = /\/models\/([^/:]+):/.exec(
            String(records(status.records_dir, "exchanges").find((e) => e.stage === "client_request")?.path),
          )?.[1];
          expect(asked).toMatch(/^gemini-[\d.]+-flash$/);
          expect(String((status.failure as { message: string }).message)).toContain(
            `"${asked}" is not this episode's model`,
          );
          expect(status.counters.delivered_exchanges).toBe(0);
          const exchanges = records(status.records_dir, "exchanges");
          const firstStatus = exchanges.find((e) => e.stage === "status");
          expect(firstStatus).toMatchObject({ status: "failed", error: { http_status: 400 } });
          expect(exchanges.some((e) => e.stage === "upstream_request")).toBe(false);
          // 400 is final for the CLI: it gives up instead of retrying for minutes.
          expect(run.code).not.toBe(0);
        }),
      cliTimeoutMs + 30_000,
    );

    test(
      "against a failing upstream: a final 400 at once, no client retry, no more upstream work",
      () =>
        runAgainstFailingUpstream("gemini", cliTimeoutMs, ({ upstream, run, statuses }) => {
          const httpStatuses = statuses.map((s) => (s.error as { http_status: number }).http_status);
          console.error(
            `gemini stopped ${run.ms} ms after start (exit ${run.code}); statuses ${JSON.stringify(httpStatuses)}`,
          );
          expect(httpStatuses).toEqual([400]);
          expect(upstream.scripted.received).toHaveLength(3); // the sidecar's own attempts (retry config)
          expect(run.code).not.toBe(0);
        }),
      cliTimeoutMs + 30_000,
    );
  },
);
