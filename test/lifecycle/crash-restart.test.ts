/**
 * kill -9 of the compiled binary at several points of the smoke episode (before
 * delivery, after delivery, during a callback), then a restart on the same data
 * directory. The restarted sidecar must show the episode `interrupted` with its
 * uncertain calls, refuse a replayed callback from the old client with a ledger
 * refusal (the old MCP token still authenticates: a 401 would make a CLI
 * silently drop its tools), answer a model request with a final 400, and the
 * records must be readable (a torn tail reported, not fatal). Needs `make build`.
 */
import { describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import {
  callback,
  callbackInFlight,
  connectMcp,
  type FunctionCall,
  fileUpstream,
  firstTurn,
  injectFaults,
  type LedgerStatus,
  ledgerEvents,
  movedTo,
  resetUpstream,
  responsesRequest,
  resultText,
  startSidecar,
  upstreamRequests,
  waitFor,
} from "../support/lifecycle-kit.ts";
import type { SidecarProcess } from "../support/sidecar-process.ts";

const upstream = await fileUpstream(30_000);

const config = {
  executor: { kind: "inert", receipt_delay_ms: 10_000 },
  delivery: { wait_ms: 1_000, previous_ack_wait_ms: 1_000 },
};

type Point = "before delivery" | "after delivery" | "during a callback";

/** Brings a new episode to the given point; returns the call delivered so far (if any). */
async function runTo(sidecar: SidecarProcess, point: Point) {
  if (point === "during a callback") {
    const { episode, call, executing } = await callbackInFlight(sidecar, upstream);
    return { episode, call, pending: executing.catch(() => undefined) };
  }
  await resetUpstream(upstream);
  const episode = await sidecar.createEpisode({ client: "codex" });
  if (point === "before delivery") {
    await injectFaults(upstream, [{ kind: "timeout" }]);
    const hanging = responsesRequest(episode, [{ role: "user", content: "go" }]).catch(() => undefined);
    await waitFor("the upstream request", async () =>
      (await upstreamRequests(upstream)).length === 1 ? true : undefined,
    );
    return { episode, call: undefined, pending: hanging };
  }
  return { episode, call: await firstTurn(episode), pending: Promise.resolve() };
}

type Restarted = {
  state: string;
  failure: { reason: string } | null;
  ledger: LedgerStatus;
  restart: {
    previous_state: string;
    uncertain: string[];
    records_frozen: boolean;
    torn_tails: Record<string, { chars: number }>;
    restart_file: string;
  };
};

describe("kill -9, then restart on the same data directory", () => {
  for (const point of ["before delivery", "after delivery", "during a callback"] as const) {
    test(point, async () => {
      const first = await startSidecar(upstream, config);
      const { episode, call, pending } = await runTo(first, point);
      first.proc.kill("SIGKILL");
      expect(await first.proc.exited).not.toBe(0);
      await pending;

      // Records are readable right after the crash (a valid prefix).
      const exchanges = readJsonLines<{ stage: string }>(join(episode.records_dir, "exchanges.jsonl"));
      expect(exchanges.entries.map((e) => e.stage)).toContain("upstream_request");
      const before = ledgerEvents(episode.records_dir).entries;
      if (point === "during a callback") {
        expect(before.filter((e) => e.callId === call?.call_id).map((e) => e.type)).toEqual([
          "claimed",
          "submitted",
          "acknowledged",
        ]);
      }
      const ledgerBefore = existsSync(join(episode.records_dir, "ledger.jsonl"))
        ? readFileSync(join(episode.records_dir, "ledger.jsonl"), "utf8")
        : "";

      const second = await startSidecar(upstream, config, first.dataDir);
      try {
        // Printed just after the banner the start waits for.
        await waitFor("the restore line", () =>
          second.output().includes("restored 1 episode(s) read-only (1 interrupted)") ? true : undefined,
        );
        const status = (await second.episode(episode.id)) as unknown as Restarted;
        expect(status.state).toBe("interrupted");
        expect(status.failure?.reason).toBe("interrupted");
        expect(status.restart.previous_state).toBe("running");
        expect(status.restart.records_frozen).toBe(false);
        const uncertain = point === "during a callback" ? [call?.call_id] : [];
        expect(status.ledger.uncertain).toEqual(uncertain as string[]);
        expect(status.restart.uncertain).toEqual(uncertain as string[]);
        expect(status.ledger.admission).toBe("closed");

        const old = movedTo(episode, second);
        // A replayed callback from the old client: the old token authenticates, the ledger refuses.
        const client = await connectMcp(old.urls.mcp, old.mcp_token);
        const replay: FunctionCall = call ?? {
          type: "function_call",
          call_id: "call_never",
          name: "ura_observe",
          arguments: "{}",
        };
        const refused = await callback(client, replay);
        expect(refused.isError).toBe(true);
        expect(resultText(refused)).toContain("ura refused this tool call; it was not executed");
        expect(resultText(refused)).toContain("the sidecar restarted");
        await client.close();
        // A wrong token is still a 401.
        await expect(connectMcp(old.urls.mcp, "ura_mcp_wrong")).rejects.toThrow();

        // A model request from the old client: a final 400, nothing reaches the upstream.
        const upstreamCount = (await upstreamRequests(upstream)).length;
        const model = await responsesRequest(old, [{ role: "user", content: "go" }]);
        expect(model.status).toBe(400);
        expect(JSON.stringify(await model.json())).toContain("restored read-only");
        expect((await responsesRequest(old, [], "ura_key_wrong")).status).toBe(401);
        expect((await upstreamRequests(upstream)).length).toBe(upstreamCount);

        // The earlier process's journal is untouched; the restart wrote its own file.
        const ledgerPath = join(episode.records_dir, "ledger.jsonl");
        expect(existsSync(ledgerPath) ? readFileSync(ledgerPath, "utf8") : "").toBe(ledgerBefore);
        const restart = readJsonLines<{
          type: string;
          event?: { type: string; code?: string; uncertain?: string[] };
        }>(join(episode.records_dir, status.restart.restart_file));
        expect(restart.tornTail).toBeUndefined();
        expect(restart.entries[0]?.type).toBe("restarted");
        expect(restart.entries[1]?.event).toMatchObject({ type: "interrupted", uncertain });
        expect(
          restart.entries.some((e) => e.event?.type === "refused" && e.event.code === "admission_closed"),
        ).toBe(true);
        expect(restart.entries.some((e) => e.type === "exchange")).toBe(true);
      } finally {
        await second.stopCleanly();
      }
    });
  }

  test("a torn last line (killed mid-write) is reported in the status and is not fatal", async () => {
    const first = await startSidecar(upstream, config);
    const { episode, call } = await runTo(first, "after delivery");
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    // What a kill in the middle of journaling the claim would leave behind.
    appendFileSync(
      join(episode.records_dir, "ledger.jsonl"),
      `{"type":"claimed","callId":"${call?.call_id}","b`,
    );
    appendFileSync(join(episode.records_dir, "exchanges.jsonl"), '{"exchange":"ex_0002","stage":"client_req');
    expect(ledgerEvents(episode.records_dir).tornTail).toBeDefined();

    const second = await startSidecar(upstream, config, first.dataDir);
    try {
      const status = (await second.episode(episode.id)) as unknown as Restarted;
      expect(status.state).toBe("interrupted");
      expect(Object.keys(status.restart.torn_tails).sort()).toEqual(["exchanges.jsonl", "ledger.jsonl"]);
      // The torn claim never completed, so the call never reached the executor: not uncertain, never claimable.
      expect(status.ledger.uncertain).toEqual([]);
      const client = await connectMcp(movedTo(episode, second).urls.mcp, episode.mcp_token);
      const refused = await callback(client, call as FunctionCall);
      expect(refused.isError).toBe(true);
      expect(resultText(refused)).toContain("the sidecar restarted");
      await client.close();
      expect(second.output()).toContain("torn record tail");
    } finally {
      await second.stopCleanly();
    }
  });

  test("after a clean shutdown: frozen records stay as they were, the restart is recorded beside them", async () => {
    const first = await startSidecar(upstream, { executor: { kind: "inert" } });
    const { episode, call } = await runTo(first, "after delivery");
    await first.stopCleanly();
    const frozen = readFileSync(join(episode.records_dir, "frozen.json"), "utf8");
    const ledger = readFileSync(join(episode.records_dir, "ledger.jsonl"), "utf8");

    const second = await startSidecar(upstream, config, first.dataDir);
    const status = (await second.episode(episode.id)) as unknown as Restarted & {
      restart: { frozen_marker: { complete: boolean } };
    };
    expect(status.state).toBe("interrupted");
    expect(status.restart.records_frozen).toBe(true);
    expect(status.restart.frozen_marker.complete).toBe(true);
    const client = await connectMcp(movedTo(episode, second).urls.mcp, episode.mcp_token);
    expect((await callback(client, call as FunctionCall)).isError).toBe(true);
    await client.close();
    await second.stopCleanly();
    expect(readFileSync(join(episode.records_dir, "frozen.json"), "utf8")).toBe(frozen);
    expect(readFileSync(join(episode.records_dir, "ledger.jsonl"), "utf8")).toBe(ledger);
    const restart = readJsonLines<{ type: string }>(join(episode.records_dir, "restart-001.jsonl"));
    expect(restart.entries.map((e) => e.type).at(-1)).toBe("stopped");
  });
});
