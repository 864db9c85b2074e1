/**
 * GET /metrics of the compiled binary, scraped by a real Prometheus server
 * (Debian `prometheus`) with the control password as its bearer credentials file,
 * after a smoke episode, a forged callback, a failed exchange and an image
 * exchange; the exposition passes `promtool check metrics`. Needs `make build`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rgbNoisePng } from "../../src/images/generate-png.ts";
import {
  connectMcp,
  driveSmokeEpisode,
  fileUpstream,
  responsesRequest,
  startSidecar,
  waitFor,
} from "../support/lifecycle-kit.ts";
import { controlPassword, type SidecarProcess } from "../support/sidecar-process.ts";

const upstream = await fileUpstream(60_000);

/** A loopback port nobody listens on right now (Prometheus needs it named up front). */
function freePort(): number {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port ?? 0;
  probe.stop(true);
  return port;
}

async function startPrometheus(target: string) {
  const dir = mkdtempSync(join(tmpdir(), "ura-prometheus-"));
  writeFileSync(join(dir, "password"), controlPassword);
  writeFileSync(
    join(dir, "prometheus.yml"),
    [
      "global: { scrape_interval: 1s, scrape_timeout: 1s }",
      "scrape_configs:",
      "  - job_name: ura-sidecar",
      "    metrics_path: /metrics",
      `    authorization: { type: Bearer, credentials_file: ${join(dir, "password")} }`,
      `    static_configs: [{ targets: ["${target}"] }]`,
      "",
    ].join("\n"),
  );
  const port = freePort();
  const proc = Bun.spawn(
    [
      "prometheus",
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
  const origin = `http://127.0.0.1:${port}`;
  await waitFor(
    "prometheus to answer",
    async () => ((await fetch(`${origin}/-/ready`).catch(() => undefined))?.ok ? true : undefined),
    30_000,
  );
  return {
    origin,
    stop: () => proc.kill(),
    /** Instant query: label sets and values of the series. */
    async query(promql: string): Promise<{ metric: Record<string, string>; value: number }[]> {
      const res = await fetch(`${origin}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = (await res.json()) as {
        data: { result: { metric: Record<string, string>; value: [number, string] }[] };
      };
      return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
  };
}

let sidecar: SidecarProcess | undefined;
let prometheus: Awaited<ReturnType<typeof startPrometheus>> | undefined;
afterAll(async () => {
  prometheus?.stop();
  await sidecar?.stop();
});

describe("metrics of the compiled binary", () => {
  test("Prometheus scrapes them with the control password; the figures match what happened", async () => {
    sidecar = await startSidecar(upstream, { executor: { kind: "inert" } });
    expect((await fetch(`${sidecar.url}/metrics`)).status).toBe(401);

    const smoke = await sidecar.createEpisode({ client: "codex" });
    expect(await driveSmokeEpisode(smoke)).toBe(4);
    // A callback for a call the model never delivered is refused (no_match).
    const forged = await sidecar.createEpisode({ client: "codex" });
    const mcp = await connectMcp(forged.urls.mcp, forged.mcp_token);
    const refused = await mcp.callTool({ name: "observe", arguments: {} });
    expect(refused.isError).toBe(true);
    await mcp.close();
    // A request the ingress cannot translate is a failed exchange.
    expect((await responsesRequest(forged, [{ role: "nobody", content: 7 }])).status).toBe(400);
    // A client PNG goes upstream as WebP.
    const png = rgbNoisePng(64, 48, 9);
    const imaged = await sidecar.createEpisode({ client: "codex" });
    const look = await responsesRequest(imaged, [
      {
        role: "user",
        content: [
          { type: "input_text", text: "look" },
          {
            type: "input_image",
            image_url: `data:image/png;base64,${Buffer.from(png.png).toString("base64")}`,
          },
        ],
      },
    ]);
    expect(look.status).toBe(200);

    prometheus = await startPrometheus(new URL(sidecar.url).host);
    const p = prometheus;
    await waitFor(
      "a successful scrape",
      async () => {
        const up = await p.query('up{job="ura-sidecar"}');
        return up[0]?.value === 1 ? true : undefined;
      },
      30_000,
    ).catch(async (error) => {
      // Prometheus says why its scrape failed.
      throw new Error(`${error}: ${await (await fetch(`${p.origin}/api/v1/targets`)).text()}`);
    });
    const value = async (promql: string) => (await p.query(promql))[0]?.value;

    expect(await value('ura_exchanges_total{protocol="responses",outcome="delivered"}')).toBe(5);
    expect(await value('ura_exchanges_total{protocol="responses",outcome="failed"}')).toBe(1);
    expect(await value('ura_exchange_failures_total{kind="invalid_request"}')).toBe(1);
    expect(await value('ura_tool_calls_total{tool="record",outcome="completed"}')).toBe(2);
    expect(await value('ura_tool_calls_total{tool="observe",outcome="admitted"}')).toBe(1);
    expect(await value('ura_tool_calls_total{tool="finish",outcome="delivered"}')).toBe(1);
    expect(await value('ura_tool_call_refusals_total{tool="observe",code="no_match"}')).toBe(1);
    expect(await value('ura_upstream_attempts_total{status_class="2xx"}')).toBe(5);
    expect(await value("ura_upstream_time_to_first_byte_seconds_count")).toBe(5);
    // One episode at a time, under the default budget: every attempt went at once, at full pace.
    expect(await value("ura_upstream_queue_wait_seconds_count")).toBe(5);
    expect(await value('ura_upstream_queue_wait_seconds_bucket{le="0.001"}')).toBe(5);
    expect(await value("ura_upstream_throttled_attempts_total")).toBe(0);
    expect(await value("ura_upstream_queue_depth")).toBe(0);
    expect(await value("ura_upstream_in_flight")).toBe(0);
    expect(await value("ura_upstream_pace_ratio")).toBe(1);
    expect(await value('ura_exchange_stage_duration_seconds_count{stage="upstream"}')).toBe(5);
    expect(await value('ura_executor_receipt_duration_seconds_count{tool="record"}')).toBe(2);
    expect(await value('gen_ai_client_token_usage_count{gen_ai_token_type="input"}')).toBe(5);
    expect(await value('ura_episodes{state="finished"}')).toBe(1);
    expect(await value('ura_episodes{state="running"}')).toBe(2);
    expect(await value("ura_image_png_bytes_total")).toBe(png.png.length);
    const webp = (await value("ura_image_webp_bytes_total")) ?? 0;
    expect(webp).toBeGreaterThan(0);
    expect(await value('ura_records_written_bytes_total{file="ledger.jsonl"}')).toBeGreaterThan(0);
    // No series carries an episode or call id.
    const series = await p.query('{job="ura-sidecar"}');
    for (const { metric } of series) {
      for (const label of Object.values(metric)) expect(label).not.toMatch(/^(ep_|call_)|[0-9a-f]{16}/);
    }
  });

  test("the exposition passes promtool check metrics", async () => {
    const running = sidecar ?? (await startSidecar(upstream, {}));
    const res = await fetch(`${running.url}/metrics`, {
      headers: { authorization: `Bearer ${controlPassword}` },
    });
    expect(res.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    const text = await res.text();
    expect(text).toContain("# TYPE ura_exchanges_total counter");
    const check = Bun.spawnSync(["promtool", "check", "metrics"], { stdin: new TextEncoder().encode(text) });
    expect(`${check.stdout}${check.stderr}`).toBe("");
    expect(check.exitCode).toBe(0);
  });
});
