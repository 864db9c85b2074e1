/**
 * Container probes against the compiled binary: /health/live answers while the
 * process runs; /health/ready turns 503 with a reason when the data directory
 * cannot take a write and while a shutdown drains admitted work. Needs `make build`.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { callbackInFlight, fileUpstream, startSidecar, waitFor } from "../lifecycle/lifecycle-kit.ts";
import { startSidecarProcess } from "../support/sidecar-process.ts";

const upstream = await fileUpstream(30_000);

async function probe(url: string) {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as { status: string; reasons?: string[] } };
}

describe("health probes of the compiled binary", () => {
  test("live and ready on a fresh start; ready 503 naming the data directory while it is gone", async () => {
    const sidecar = await startSidecarProcess();
    try {
      expect(await probe(`${sidecar.url}/health/live`)).toEqual({ status: 200, body: { status: "live" } });
      expect(await probe(`${sidecar.url}/health/ready`)).toEqual({ status: 200, body: { status: "ready" } });
      expect((await probe(`${sidecar.url}/health`)).body.status).toBe("ok");

      rmSync(sidecar.dataDir, { recursive: true, force: true });
      const gone = await probe(`${sidecar.url}/health/ready`);
      expect(gone.status).toBe(503);
      expect(gone.body).toEqual({
        status: "not_ready",
        reasons: [`data directory not writable: ENOENT ${sidecar.dataDir}`],
      });
      expect((await probe(`${sidecar.url}/health/live`)).status).toBe(200);

      mkdirSync(sidecar.dataDir);
      expect((await probe(`${sidecar.url}/health/ready`)).status).toBe(200);
    } finally {
      await sidecar.stop();
    }
  });

  test("while SIGTERM drains an admitted callback: ready 503 (draining), live 200, then exit 0", async () => {
    const sidecar = await startSidecar(upstream, {
      executor: { kind: "inert", receipt_delay_ms: 1_500 },
      shutdown: { drain_deadline_ms: 10_000 },
    });
    const { executing } = await callbackInFlight(sidecar, upstream);
    sidecar.proc.kill("SIGTERM");
    // The signal is handled asynchronously: wait for the probe to turn, then say why it did.
    const draining = await waitFor("ready to turn 503", async () => {
      const answer = await probe(`${sidecar.url}/health/ready`);
      return answer.status === 503 ? answer : undefined;
    });
    expect(draining.body.reasons).toEqual(["draining: shutdown in progress, new exchanges are refused"]);
    expect((await probe(`${sidecar.url}/health/live`)).status).toBe(200);
    expect((await executing).isError).toBeFalsy();
    expect(await sidecar.proc.exited).toBe(0);
  });
});
