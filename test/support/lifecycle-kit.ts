/**
 * Test kit for the lifecycle tests (tests only): the compiled binary with a
 * config file, the scripted upstream on a loopback port, model exchanges as
 * plain HTTP requests to the Responses ingress, MCP callbacks with the real SDK
 * client, and readers for the records a run leaves behind.
 * Needs `make build` (dist/ura-sidecar).
 */
import { afterAll, setDefaultTimeout } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import robotManifest from "../../manifests/tools/robot.json";
import { readJsonLines } from "../../src/records/jsonl-file.ts";
import {
  type ServedScriptedUpstream,
  serveScriptedUpstream,
} from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "./sidecar-process.ts";

/** A small deterministic PRNG (values in [0, 1)), so a run with random delays can be repeated from its seed. */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export type Upstream = ServedScriptedUpstream;
export type UpstreamRequest = { seq: number; aborted: boolean; completed: boolean; fault?: string };

export const startUpstream = () => serveScriptedUpstream(0);

/**
 * A lifecycle test file's setting-up: its default test timeout, and one scripted
 * upstream started now and stopped after the file's tests
 * (`const upstream = await fileUpstream(30_000);` at the top of the file).
 */
export async function fileUpstream(timeoutMs: number): Promise<Upstream> {
  setDefaultTimeout(timeoutMs);
  const upstream = await startUpstream();
  afterAll(() => upstream.stop());
  return upstream;
}

/** Forgets what the upstream received and any faults still queued. */
export async function resetUpstream(upstream: Upstream): Promise<void> {
  await fetch(`${upstream.origin}/__script/reset`, { method: "POST" });
}

/** Starts the binary against the scripted upstream with the given config (info-level logs unless it says otherwise). */
export async function startSidecar(
  upstream: Upstream,
  config: Record<string, unknown>,
  dataDir?: string,
): Promise<SidecarProcess> {
  return startSidecarProcess({
    upstreamUrl: upstream.url,
    config: { log_level: "info", ...config },
    ...(dataDir ? { dataDir } : {}),
  });
}

export const responsesTools = [
  { type: "function", name: "ura_observe", parameters: { type: "object", properties: {} } },
  {
    type: "function",
    name: "ura_record",
    parameters: { type: "object", properties: { nonce: { type: "string" } } },
  },
  {
    type: "function",
    name: "ura_finish",
    parameters: { type: "object", properties: { answer: { type: "string" } } },
  },
];

export type FunctionCall = { type: "function_call"; call_id: string; name: string; arguments: string };

/** One model exchange through the Responses ingress (what OpenCode or Codex would send). */
export function responsesRequest(
  episode: LaunchInfo,
  input: unknown[],
  key = episode.ingress_key,
): Promise<Response> {
  return fetch(`${episode.urls.responses}/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "m", input, tools: responsesTools, stream: false }),
  });
}

/** The first turn of the smoke episode: the scripted model calls `ura_observe`. */
export async function firstTurn(episode: LaunchInfo): Promise<FunctionCall> {
  const res = await responsesRequest(episode, [{ role: "user", content: "go" }]);
  if (res.status !== 200) throw new Error(`turn 1: HTTP ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { output: { type: string }[] };
  const call = body.output.find((o) => o.type === "function_call") as FunctionCall | undefined;
  if (!call) throw new Error(`turn 1: no function call in ${JSON.stringify(body)}`);
  return call;
}

export async function connectMcp(url: string, token: string): Promise<Client> {
  const client = new Client({ name: "ura-lifecycle-test", version: "0.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

/** The MCP callback of a delivered call, identified by its call id as Codex does (`_meta.callId`). */
export function callback(client: Client, call: FunctionCall) {
  return client.callTool({
    name: call.name.replace(/^ura_/, ""),
    arguments: JSON.parse(call.arguments) as Record<string, unknown>,
    _meta: { callId: call.call_id },
  });
}

export const resultText = (result: unknown) =>
  ((result as { content?: { type: string; text?: string }[] }).content ?? [])
    .map((p) => p.text ?? `[${p.type}]`)
    .join("\n");

export async function upstreamRequests(upstream: Upstream): Promise<UpstreamRequest[]> {
  return (await (await fetch(`${upstream.origin}/__script/requests`)).json()) as UpstreamRequest[];
}

export async function injectFaults(upstream: Upstream, faults: unknown[]): Promise<void> {
  const res = await fetch(`${upstream.origin}/__script/faults`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ faults }),
  });
  if (!res.ok) throw new Error(`faults: HTTP ${res.status}`);
}

/**
 * A new (Codex) episode whose first call, `observe`, was delivered and whose MCP
 * callback is executing at the (slow) inert executor: the ledger shows it
 * acknowledged, the receipt still pending. `executing` settles with the callback.
 */
export async function callbackInFlight(sidecar: SidecarProcess, upstream: Upstream) {
  await resetUpstream(upstream);
  const episode = await sidecar.createEpisode({ client: "codex" });
  const call = await firstTurn(episode);
  const client = await connectMcp(episode.urls.mcp, episode.mcp_token);
  const executing = callback(client, call);
  await waitFor("the callback to be executing", async () => {
    const { ledger } = (await sidecar.episode(episode.id)) as unknown as { ledger: LedgerStatus };
    return ledger.counts.acknowledged === 1 ? true : undefined;
  });
  return { episode, call, client, executing };
}

/** An episode's old launch info pointed at a restarted sidecar (same id and credentials, new port). */
export function movedTo(episode: LaunchInfo, sidecar: SidecarProcess): LaunchInfo {
  const root = `${sidecar.url}/e/${episode.id}`;
  return {
    ...episode,
    urls: {
      responses: `${root}/v1`,
      gemini: `${root}/gemini`,
      anthropic: `${root}/anthropic`,
      mcp: `${root}/mcp`,
    },
  };
}

/** Polls until `check` returns a value (not undefined) or the time is up. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  ms = 5_000,
  intervalMs = 15,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(intervalMs);
  }
}

export function ledgerEvents(dir: string) {
  return readJsonLines<Record<string, unknown> & { type: string }>(join(dir, "ledger.jsonl"));
}

export function readJson(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
}

/** Ledger status of an episode as the control API reports it. */
export type LedgerStatus = {
  admission: string;
  interrupted: boolean;
  counts: Record<string, number>;
  claimed: string[];
  unfinished: string[];
  uncertain: string[];
};

/**
 * The whole smoke episode as a Responses client drives it: each turn's calls are
 * called back over MCP, their text results go back to the model, until a turn
 * has no calls. Stops quietly (returns the turns done) when the sidecar goes away.
 */
export async function driveSmokeEpisode(episode: LaunchInfo): Promise<number> {
  const input: unknown[] = [{ role: "user", content: "Observe, record the nonce twice, then finish." }];
  let turns = 0;
  let client: Client | undefined;
  try {
    client = await connectMcp(episode.urls.mcp, episode.mcp_token);
    for (; turns < 6; ) {
      const res = await responsesRequest(episode, input);
      if (res.status !== 200) return turns;
      turns += 1;
      const output = ((await res.json()) as { output: { type: string }[] }).output;
      const calls = output.filter((o) => o.type === "function_call") as FunctionCall[];
      if (calls.length === 0) return turns;
      input.push(...calls);
      const mcp = client;
      const results = await Promise.all(calls.map((call) => callback(mcp, call)));
      for (const [i, call] of calls.entries()) {
        input.push({ type: "function_call_output", call_id: call.call_id, output: resultText(results[i]) });
      }
    }
    return turns;
  } catch {
    return turns;
  } finally {
    await client?.close().catch(() => {});
  }
}

/** The robot manifest (manifests/tools/robot.json) with the named tools' policies added (`approval`, `rate`, …). */
export function robotManifestWith(policies: Record<string, Record<string, unknown>>) {
  return {
    ...robotManifest,
    tools: robotManifest.tools.map((tool) => ({ ...tool, ...policies[tool.name] })),
  };
}

/** Until the episode lists a call awaiting approval (control API); returns what it lists. */
export function awaitApprovals(sidecar: SidecarProcess, episodeId: string): Promise<{ call_id: string }[]> {
  return waitFor("a call to await approval", async () => {
    const res = await sidecar.control(`/episodes/${episodeId}/approvals`);
    const { approvals } = (await res.json()) as { approvals: { call_id: string }[] };
    return approvals.length > 0 ? approvals : undefined;
  });
}
