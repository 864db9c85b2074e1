/**
 * Property test of the adapter under concurrency: fast-check's scheduler
 * interleaves deliveries, revocations, honest callbacks (with or without call
 * identity, arriving before or after delivery, in any order) and forged or
 * duplicate ones, and the executor's acknowledgements and receipts.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SidecarError } from "../lib/errors.ts";
import { createEpisodeLedger } from "./episode-ledger.ts";
import type { LedgerEvent } from "./events.ts";
import { replayJournal, summarizeLedger } from "./ledger-state.ts";
import type { LedgerCallback } from "./match-callback.ts";

const argPool = [{ nonce: "a" }, { nonce: "b" }];

const batchArbitrary = fc.record({
  args: fc.array(fc.nat(1), { minLength: 1, maxLength: 4 }),
  delivered: fc.boolean(),
});
const extraArbitrary = fc.record({
  args: fc.nat(2),
  identity: fc.oneof(fc.constant(undefined), fc.constant("forged"), fc.nat()),
});

describe("episode ledger under concurrency", () => {
  test("every delivered call runs exactly once, in batch order; nothing else runs", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(batchArbitrary, { minLength: 1, maxLength: 3 }),
        fc.array(extraArbitrary, { maxLength: 4 }),
        /** Whether the client sends the model call id (Claude Code, Codex, OpenCode plugin) or not (Gemini). */
        fc.boolean(),
        async (s, batches, extras, withIdentity) => {
          const journal: LedgerEvent[] = [];
          const ledger = createEpisodeLedger({
            journal: { append: (event) => journal.push(event) },
            deliveryWaitMs: 60_000,
            previousAckWaitMs: 60_000,
          });
          const calls = batches.flatMap((batch, b) =>
            batch.args.map((a, i) => ({ id: `c${b}_${i}`, batch: b, index: i, args: argPool[a] ?? {} })),
          );
          batches.forEach((_, b) => {
            ledger.register({
              batchId: `b${b}`,
              calls: calls
                .filter((c) => c.batch === b)
                .map((c) => ({ id: c.id, modelName: "mcp__ura__record", tool: "record", args: c.args })),
            });
          });

          const admitted: string[] = [];
          const executorLog: string[] = [];
          const run = async (callback: LedgerCallback) => {
            let admission: Awaited<ReturnType<typeof ledger.admit>>;
            try {
              admission = await ledger.admit(callback);
            } catch (error) {
              expect(error).toBeInstanceOf(SidecarError);
              return;
            }
            const call = admission.call;
            admitted.push(call.id);
            // At the executor: every earlier call of the batch is acknowledged or finished.
            const batchCalls = ledger.state().batches.get(call.batchId)?.callIds ?? [];
            for (const earlier of batchCalls.slice(0, call.index)) {
              expect(["acknowledged", "completed", "failed", "skipped"]).toContain(
                ledger.state().calls.get(earlier)?.status ?? "unknown",
              );
            }
            admission.submitted();
            executorLog.push(call.id);
            await s.schedule(Promise.resolve(), `ack ${call.id}`);
            admission.acknowledged(`job-${call.id}`);
            await s.schedule(Promise.resolve(), `receipt ${call.id}`);
            admission.receipt({ ok: true });
          };

          const tasks: Promise<void>[] = [];
          batches.forEach((batch, b) => {
            tasks.push(
              s.schedule(Promise.resolve(), `deliver b${b}`).then(() => {
                if (batch.delivered) ledger.delivered(`b${b}`);
                else ledger.revoke(`b${b}`);
              }),
            );
          });
          for (const call of calls) {
            const callback: LedgerCallback = {
              tool: "record",
              args: withIdentity ? { ...call.args, _callID: call.id } : call.args,
              ...(withIdentity ? { identity: { kind: "call_id" as const, value: call.id } } : {}),
            };
            tasks.push(s.schedule(Promise.resolve(), `callback ${call.id}`).then(() => run(callback)));
          }
          for (const extra of extras) {
            const value =
              typeof extra.identity === "number"
                ? (calls[extra.identity % calls.length]?.id ?? "none")
                : extra.identity;
            const callback: LedgerCallback = {
              tool: "record",
              args: extra.args === 2 ? { nonce: "forged" } : (argPool[extra.args] ?? {}),
              ...(value === undefined ? {} : { identity: { kind: "call_id" as const, value } }),
            };
            tasks.push(s.schedule(Promise.resolve(), `extra callback`).then(() => run(callback)));
          }
          await s.waitFor(Promise.all(tasks));

          const deliveredCalls = calls.filter((c) => batches[c.batch]?.delivered).map((c) => c.id);
          // Exactly once, only delivered, and every delivered call got its turn.
          expect(new Set(admitted).size).toBe(admitted.length);
          expect([...admitted].sort()).toEqual([...deliveredCalls].sort());
          // Executor order within a batch is batch order.
          for (const b of batches.keys()) {
            const order = executorLog.filter((id) => id.startsWith(`c${b}_`));
            expect(order).toEqual(
              [...order].sort((x, y) => Number(x.split("_")[1]) - Number(y.split("_")[1])),
            );
          }
          const summary = ledger.summary();
          expect(summary.unfinished).toEqual([]);
          expect(summarizeLedger(replayJournal(journal))).toEqual({
            ...summary,
            admission: "closed",
            interrupted: true,
          });
        },
      ),
      { numRuns: 150, timeout: 2_000 },
    );
  });
});
