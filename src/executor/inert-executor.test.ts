import { describe, expect, test } from "bun:test";
import { loadCodecs } from "../images/codecs.ts";
import type { ExecutorJob } from "./executor.ts";
import { createInertExecutor } from "./inert-executor.ts";
import { inertPalette } from "./inert-palette.ts";

const job = (callId: string, route: string, args: Record<string, unknown> = {}): ExecutorJob => ({
  callId,
  episodeId: "ep_test",
  tool: route,
  route,
  mode: "foreground",
  arguments: args,
});

async function run(executor: ReturnType<typeof createInertExecutor>, j: ExecutorJob) {
  const { jobId } = await executor.submit(j);
  return executor.receipt(jobId);
}

describe("createInertExecutor", () => {
  test("observe returns a solid palette-colour PNG and a nonce the scripted model can parse", async () => {
    const codecs = await loadCodecs();
    const executor = createInertExecutor({ random: () => 0.99, newNonce: () => "abc123" });
    const receipt = await run(executor, job("c1", "observe"));
    expect(receipt.ok).toBe(true);
    const text = receipt.content.find((p) => p.type === "text");
    expect(/nonce[\s:=]+"?([A-Za-z0-9_-]+)/.exec(text?.type === "text" ? text.text : "")?.[1]).toBe("abc123");
    const image = receipt.content.find((p) => p.type === "image");
    if (image?.type !== "image") throw new Error("no image");
    const decoded = codecs.decodePng(Buffer.from(image.data, "base64"));
    expect([decoded.width, decoded.height]).toEqual([64, 48]);
    const colour = executor.currentColour();
    expect(colour).toBe("orange");
    expect([...decoded.data.subarray(0, 3)]).toEqual([...inertPalette.orange]);
  });

  test("record succeeds only for the nonce of the latest observation", async () => {
    let n = 0;
    const executor = createInertExecutor({ newNonce: () => `nonce${++n}` });
    expect((await run(executor, job("r0", "record", { nonce: "nonce1" }))).ok).toBe(false);
    await run(executor, job("o1", "observe"));
    expect((await run(executor, job("r1", "record", { nonce: "nonce1" }))).ok).toBe(true);
    expect((await run(executor, job("r2", "record", { nonce: "nonce1" }))).ok).toBe(true);
    await run(executor, job("o2", "observe"));
    expect((await run(executor, job("r3", "record", { nonce: "nonce1" }))).ok).toBe(false);
    expect((await run(executor, job("r4", "record", { nonce: "nonce2" }))).ok).toBe(true);
  });

  test("finish submits and says whether the answer names the observed colour", async () => {
    const executor = createInertExecutor({ random: () => 0 });
    await run(executor, job("o", "observe"));
    expect(executor.currentColour()).toBe("red");
    expect((await run(executor, job("f1", "finish", { answer: " Red " }))).data).toMatchObject({
      submitted: true,
      correct: true,
    });
    expect((await run(executor, job("f2", "finish", { answer: "blue" }))).data).toMatchObject({
      submitted: true,
      correct: false,
    });
  });

  test("a call id submitted twice names the same job (idempotency); unknown routes fail", async () => {
    const executor = createInertExecutor();
    const a = await executor.submit(job("same", "observe"));
    const b = await executor.submit(job("same", "observe"));
    expect(b.jobId).toBe(a.jobId);
    expect(executor.jobs()).toHaveLength(1);
    expect((await run(executor, job("x", "teleport"))).ok).toBe(false);
    await expect(executor.receipt("inert_9999")).rejects.toThrow("no job");
  });

  test("receipts carry the timing of submission, acknowledgement and completion", async () => {
    let now = 0;
    const executor = createInertExecutor({ clock: () => (now += 10), ackDelayMs: 1 });
    const receipt = await run(executor, job("c", "observe"));
    expect((receipt.data as { timing: unknown }).timing).toEqual({
      seq: 1,
      submitted_at: 10,
      acknowledged_at: 20,
      completed_at: 30,
    });
  });
});

describe("stop", () => {
  test("a job whose receipt is still to come ends at once as stopped; a finished or unknown job is not stopped", async () => {
    const executor = createInertExecutor({ receiptDelayMs: 10_000 });
    const { jobId } = await executor.submit(job("c1", "observe"));
    const receipt = executor.receipt(jobId);
    const started = Date.now();
    expect(await executor.stop?.({ jobId, callId: "c1", episodeId: "ep_test" }, "cancelled")).toMatchObject({
      status: 200,
      stopped: true,
    });
    const stopped = await receipt;
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(stopped.ok).toBe(false);
    expect(stopped.data).toMatchObject({ stopped: true, reason: "cancelled" });
    expect(await executor.stop?.({ jobId, callId: "c1", episodeId: "ep_test" }, "cancelled")).toMatchObject({
      status: 404,
      stopped: false,
    });
  });
});
