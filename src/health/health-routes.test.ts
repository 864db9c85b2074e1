import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHealthRoutes, type HealthDeps } from "./health-routes.ts";
import { codecsWarmedCheck, dataDirWritableCheck, notDrainingCheck } from "./readiness.ts";

function routes(overrides: Partial<HealthDeps> = {}) {
  return createHealthRoutes({
    version: "1.2.3",
    demoUpstream: false,
    isShuttingDown: () => false,
    readiness: [],
    ...overrides,
  });
}

describe("health routes", () => {
  test("/live answers 200 even when not ready", async () => {
    const app = routes({ readiness: [() => "broken"], isShuttingDown: () => true });
    const res = await app.request("/live");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "live" });
  });

  test("/ready is 200 when every check passes, with no caching", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-ready-"));
    const app = routes({
      readiness: [codecsWarmedCheck(() => true), dataDirWritableCheck(dir), notDrainingCheck(() => false)],
    });
    const res = await app.request("/ready");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual({ status: "ready" });
  });

  test("/ready is 503 listing every failing check's reason in order", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-ready-"));
    rmSync(dir, { recursive: true });
    const app = routes({
      readiness: [codecsWarmedCheck(() => false), dataDirWritableCheck(dir), notDrainingCheck(() => true)],
    });
    const res = await app.request("/ready");
    expect(res.status).toBe(503);
    const body = (await res.json()) as { status: string; reasons: string[] };
    expect(body.status).toBe("not_ready");
    expect(body.reasons).toEqual([
      "image codecs are still warming up",
      `data directory not writable: ENOENT ${dir}`,
      "draining: shutdown in progress, new exchanges are refused",
    ]);
  });

  test("/ leaves no probe file behind and keeps its old answer", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ura-ready-"));
    await dataDirWritableCheck(dir)();
    expect(Array.from(new Bun.Glob("*").scanSync({ cwd: dir, dot: true }))).toEqual([]);
    const res = await routes({ demoUpstream: true }).request("/");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", version: "1.2.3", demo_upstream: true });
    expect((await routes({ isShuttingDown: () => true }).request("/")).status).toBe(503);
  });
});
