/**
 * Security, against the compiled binary with the scripted upstream:
 * MCP without a token or with another episode's token; forged and replayed
 * callbacks; the control API without its password; an ingress with another
 * episode's key; oversized bodies (body_limit_bytes); episode ids carrying path
 * characters (sent verbatim over a raw socket) → 404 with nothing created outside
 * the data directory; and, after a full smoke episode (Messages ingress + MCP,
 * debug logs), no secret value in the logs or in any file under the data
 * directory. Needs `make build` (dist/ura-sidecar).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { ingressKits, protocols, readJsonLines } from "../support/ingress-kit.ts";
import { postMcp } from "../support/mcp-kit.ts";
import { sendRaw } from "../support/raw-http.ts";
import {
  controlPassword,
  type LaunchInfo,
  type SidecarProcess,
  startSidecarProcess,
} from "../support/sidecar-process.ts";

const bodyLimit = 300_000;
/** What startSidecarProcess puts in URA_UPSTREAM_API_KEY. */
const upstreamKey = "sk-test-upstream-secret-key";

let upstream: Awaited<ReturnType<typeof serveScriptedUpstream>>;
let sidecar: SidecarProcess;
/** Holds only the data directory; nothing else may appear here. */
let root: string;
let dataDir: string;
let checks = 0;

beforeAll(async () => {
  upstream = await serveScriptedUpstream();
  root = mkdtempSync(join(tmpdir(), "ura-security-"));
  dataDir = join(root, "data");
  mkdirSync(dataDir);
  sidecar = await startSidecarProcess({
    upstreamUrl: upstream.url,
    dataDir,
    config: { body_limit_bytes: bodyLimit, log_level: "debug" },
  });
});
afterAll(async () => {
  console.log(`security: ${checks} checks`);
  await sidecar.stopCleanly();
  upstream.stop();
});

/** Every episode this file creates: all their credentials are checked in the secrets grep. */
const launched: LaunchInfo[] = [];
async function newEpisode(options?: Record<string, unknown>): Promise<LaunchInfo> {
  const episode = await sidecar.createEpisode(options);
  launched.push(episode);
  return episode;
}

async function connect(url: string, token: string): Promise<Client> {
  const client = new Client({ name: "ura-security-test", version: "0.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

const textOf = (result: unknown) =>
  ((result as { content?: { type: string; text?: string }[] }).content ?? [])
    .map((p) => p.text ?? `[${p.type}]`)
    .join("\n");

function modelRequest(episode: LaunchInfo, protocol: (typeof protocols)[number], key: string | undefined) {
  const kit = ingressKits[protocol];
  return fetch(`${sidecar.url}${kit.path(episode.id, "qwen3-vl-plus", false)}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key === undefined ? {} : kit.headers(key)) },
    body: JSON.stringify(kit.firstTurn(false)),
  });
}

describe("credentials", () => {
  test("MCP: no token, a wrong token, another episode's token, the ingress key → 401; its own token works", async () => {
    const a = await newEpisode();
    const b = await newEpisode();
    for (const headers of [
      {},
      { authorization: "Bearer ura_mcp_wrong" },
      { authorization: `Bearer ${b.mcp_token}` },
      { authorization: `Bearer ${a.ingress_key}` },
      { authorization: `Bearer ${controlPassword}` },
      { "x-api-key": a.mcp_token },
    ] as Record<string, string>[]) {
      const res = await postMcp(a.urls.mcp, headers);
      expect(res.status).toBe(401);
      checks += 1;
    }
    await expect(connect(a.urls.mcp, b.mcp_token)).rejects.toThrow();
    const own = await connect(a.urls.mcp, a.mcp_token);
    expect((await own.listTools()).tools.map((t) => t.name)).toEqual(["observe", "record", "finish"]);
    await own.close();
    checks += 2;
  });

  test("ingress: no key, a wrong key, another episode's key, the MCP token → 401 in each protocol's envelope, no upstream request", async () => {
    const a = await newEpisode();
    const b = await newEpisode();
    const before = upstream.scripted.received.length;
    for (const protocol of protocols) {
      const kit = ingressKits[protocol];
      for (const key of [undefined, "ura_key_wrong", b.ingress_key, a.mcp_token]) {
        const res = await modelRequest(a, protocol, key);
        expect(res.status).toBe(401);
        expect(kit.readError(401, await res.json()).type).toBe(kit.expected("authentication").type);
        checks += 1;
      }
    }
    expect(upstream.scripted.received.length).toBe(before);
    const status = await sidecar.episode(a.id);
    expect(status.state).toBe("running");
    expect(status.counters).toMatchObject({ delivered_exchanges: 0, failed_exchanges: 0 });
  });

  test("control API: every route without the password, or with a wrong one or an episode credential, is 401", async () => {
    const episode = await newEpisode();
    const routes: [string, string][] = [
      ["GET", "/control/episodes"],
      ["POST", "/control/episodes"],
      ["GET", `/control/episodes/${episode.id}`],
      ["GET", `/control/episodes/${episode.id}/launch`],
      ["POST", `/control/episodes/${episode.id}/cancel`],
      ["POST", "/control/shutdown"],
    ];
    for (const [method, path] of routes) {
      for (const auth of [
        undefined,
        "Bearer wrong-password",
        `Bearer ${episode.mcp_token}`,
        `Bearer ${episode.ingress_key}`,
      ]) {
        const res = await fetch(`${sidecar.url}${path}`, {
          method,
          headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
          ...(method === "POST" ? { body: "{}" } : {}),
        });
        expect(res.status).toBe(401);
        expect(JSON.stringify(await res.json())).not.toContain(episode.mcp_token);
        checks += 1;
      }
    }
    // Nothing above took effect: the episode still runs, the sidecar still serves.
    expect((await sidecar.episode(episode.id)).state).toBe("running");
    expect((await fetch(`${sidecar.url}/health`)).status).toBe(200);
  });
});

describe("callbacks", () => {
  test("a forged callback (never delivered) and a replayed one (already claimed) are refused and never executed", async () => {
    const episode = await newEpisode();
    const client = await connect(episode.urls.mcp, episode.mcp_token);
    try {
      const forged = [
        await client.callTool({ name: "observe", arguments: {} }),
        await client.callTool({
          name: "observe",
          arguments: {},
          _meta: { "claudecode/toolUseId": "call_1_0" },
        }),
        await client.callTool({ name: "finish", arguments: { answer: "red", _callID: "call_forged" } }),
      ];
      for (const result of forged) {
        expect(result.isError).toBe(true);
        expect(textOf(result)).toContain("refused");
      }
      // One real exchange delivers one observe call.
      const res = await modelRequest(episode, "messages", episode.ingress_key);
      expect(res.status).toBe(200);
      const call = (
        (await res.json()) as { content: { type: string; id: string; name: string }[] }
      ).content.find((b) => b.type === "tool_use");
      expect(call?.name).toBe("mcp__ura__observe");
      const meta = { "claudecode/toolUseId": call?.id };
      const claimed = await client.callTool({ name: "observe", arguments: {}, _meta: meta });
      expect(claimed.isError).toBeFalsy();
      const replays = [
        await client.callTool({ name: "observe", arguments: {}, _meta: meta }),
        await client.callTool({ name: "observe", arguments: {} }),
      ];
      for (const result of replays) {
        expect(result.isError).toBe(true);
        expect(textOf(result)).toContain("refused");
      }
      // Forged with a delivered id but another tool: refused too.
      const wrongTool = await client.callTool({ name: "finish", arguments: { answer: "red" }, _meta: meta });
      expect(wrongTool.isError).toBe(true);
    } finally {
      await client.close();
    }
    const journal = await readJsonLines(join(episode.records_dir, "ledger.jsonl"));
    expect(journal.filter((e) => e.type === "submitted")).toHaveLength(1);
    expect(journal.filter((e) => e.type === "refused").map((e) => e.code)).toEqual([
      "no_match",
      "no_match",
      "no_match",
      "already_claimed",
      "already_claimed",
      "tool_differs",
    ]);
    expect((await sidecar.episode(episode.id)).counters).toMatchObject({
      tool_calls_admitted: 1,
      tool_calls_refused: 6,
    });
    checks += 6;
  });
});

describe("limits and paths", () => {
  test("bodies over body_limit_bytes are refused naming the limit on every route, sized or streamed: a final 400 in each ingress's envelope (recorded), a 413 on MCP and control", async () => {
    const episode = await newEpisode();
    const big = JSON.stringify({ padding: "x".repeat(bodyLimit + 10) });
    const kit = ingressKits;
    const targets: [string, Record<string, string>, (typeof protocols)[number] | undefined][] = [
      ...protocols.map(
        (protocol) =>
          [
            `${sidecar.url}${kit[protocol].path(episode.id, "qwen3-vl-plus", false)}`,
            kit[protocol].headers(episode.ingress_key),
            protocol,
          ] as [string, Record<string, string>, (typeof protocols)[number]],
      ),
      [
        episode.urls.mcp,
        { authorization: `Bearer ${episode.mcp_token}`, accept: "application/json, text/event-stream" },
        undefined,
      ],
      [`${sidecar.url}/control/episodes`, { authorization: `Bearer ${controlPassword}` }, undefined],
    ];
    for (const [url, headers, protocol] of targets) {
      for (const streamed of [false, true]) {
        const body = streamed
          ? new ReadableStream<Uint8Array>({
              start(controller) {
                const bytes = new TextEncoder().encode(big);
                for (let i = 0; i < bytes.length; i += 64 * 1024)
                  controller.enqueue(bytes.subarray(i, i + 64 * 1024));
                controller.close();
              },
            })
          : big;
        const res = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body,
          ...(streamed ? { duplex: "half" } : {}),
        } as RequestInit);
        const answer = await res.json();
        if (protocol === undefined) {
          expect(res.status).toBe(413);
          expect(answer).toEqual({
            error: {
              type: "request_too_large",
              message: `request body over the limit of ${bodyLimit} bytes (body_limit_bytes)`,
            },
          });
        } else {
          const expected = kit[protocol].expected("request_too_large");
          expect(res.status).toBe(expected.status);
          const read = kit[protocol].readError(res.status, answer);
          expect(read.type).toBe(expected.type);
          expect(read.message).toContain(String(bodyLimit));
        }
        checks += 1;
      }
    }
    // Each refused model request left a trace in the episode's records, without its body.
    const aux = await readJsonLines(join(episode.records_dir, "auxiliary.jsonl"));
    expect(aux.filter((l) => l.reason === "body over body_limit_bytes").map((l) => l.protocol)).toEqual(
      protocols.flatMap((p) => [p, p]),
    );
    expect(JSON.stringify(aux)).not.toContain("xxxxxxxxxx");
    expect(upstream.scripted.received.filter((r) => JSON.stringify(r.body).includes("xxxxxxxxxx"))).toEqual(
      [],
    );
    expect((await sidecar.episode(episode.id)).counters).toMatchObject({ delivered_exchanges: 0 });
    // Just under the limit is still served (the limit is the configured one, not a smaller one).
    const fits = await fetch(`${sidecar.url}${kit.messages.path(episode.id, "qwen3-vl-plus", false)}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...kit.messages.headers(episode.ingress_key) },
      body: JSON.stringify({
        ...kit.messages.firstTurn(false),
        metadata: { user_id: "u".repeat(bodyLimit - 2_000) },
      }),
    });
    // Not refused for its size (the answer may still be an error of another kind).
    expect(JSON.stringify(await fits.json())).not.toContain("body_limit_bytes");
    expect(fits.status).not.toBe(413);
  });

  test("episode ids with path characters are 404 on every route and create nothing outside the data directory", async () => {
    const episode = await newEpisode();
    const before = await settledTree(root);
    const ids = [
      "..",
      "../..",
      "..%2F..%2Fescaped",
      "%2e%2e%2f%2e%2e%2fescaped",
      `${episode.id}%2F..%2F..%2Fescaped`,
      "ep_..%2Fescaped",
      "ep_abc%00",
      "ep_%2e%2e",
      `ep_${"a".repeat(5_000)}`,
      "EP_ABC",
      "ep_abc%20def",
      "ep_abc%2Fdef",
      "ep_abc\\..\\..",
    ];
    const suffixes = [
      "/v1/responses",
      "/gemini/v1beta/models/qwen3-vl-plus:generateContent",
      "/anthropic/v1/messages",
      "/mcp",
    ];
    for (const id of ids) {
      const targets = [
        ...suffixes.map((s) => `/e/${id}${s}`),
        `/control/episodes/${id}`,
        `/control/episodes/${id}/cancel`,
      ];
      for (const target of targets) {
        const res = await sendRaw(sidecar.url, {
          method: target.startsWith("/control") && !target.endsWith("cancel") ? "GET" : "POST",
          target,
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            authorization: `Bearer ${target.startsWith("/control") ? controlPassword : episode.ingress_key}`,
            "x-api-key": episode.ingress_key,
          },
          body: target.endsWith("/cancel") ? "{}" : JSON.stringify(ingressKits.messages.firstTurn(false)),
        });
        // A path that normalises out of /e/… is no route at all: also 404. Never a 2xx, never a 5xx.
        if (res.status !== 404)
          throw new Error(`${target.slice(0, 120)} → HTTP ${res.status}\n${res.raw.slice(0, 400)}`);
        checks += 1;
      }
    }
    const after = await settledTree(root);
    expect(after.filter((p) => !before.includes(p) && !p.startsWith(`data/episodes/${episode.id}/`))).toEqual(
      [],
    );
    expect(readdirSync(root)).toEqual(["data"]);
    expect(readdirSync(join(dataDir, "episodes")).every((name) => /^ep_[a-z0-9]+$/.test(name))).toBe(true);
    expect((await sidecar.episode(episode.id)).counters).toMatchObject({
      delivered_exchanges: 0,
      failed_exchanges: 0,
    });
  });
});

/**
 * The tree once no episode.json rewrite is in flight: a rewrite's temporary file
 * (episode.json.bg.tmp) exists for a moment after any episode change, in this test's
 * other episodes too, and is not something a request created.
 */
async function settledTree(dir: string): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const tree = listTree(dir);
    if (!tree.some((p) => p.endsWith(".bg.tmp")) || Date.now() > deadline) return tree;
    await Bun.sleep(20);
  }
}

/** Every file and directory under `dir`, relative, sorted. */
function listTree(dir: string, prefix = ""): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const rel = `${prefix}${entry.name}`;
    return entry.isDirectory() ? [`${rel}/`, ...listTree(join(dir, entry.name), `${rel}/`)] : [rel];
  });
}

describe("secrets", () => {
  test("after a full smoke episode (Messages + MCP), no secret appears in the logs or in any file under the data directory", async () => {
    const episode = await newEpisode({ client: "claude" });
    const kit = ingressKits.messages;
    const client = await connect(episode.urls.mcp, episode.mcp_token);
    type Block = { type: string; id?: string; name?: string; input?: Record<string, unknown> };
    const messages: unknown[] = [
      { role: "user", content: "Observe, record the nonce twice, finish with the colour." },
    ];
    const turn = async (): Promise<Block[]> => {
      const res = await fetch(`${sidecar.url}${kit.path(episode.id, "qwen3-vl-plus", true)}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...kit.headers(episode.ingress_key) },
        body: JSON.stringify({ ...kit.firstTurn(true), stream: false, messages }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { content: Block[] }).content;
    };
    try {
      for (let i = 0; i < 6; i++) {
        const content = await turn();
        const calls = content.filter((b) => b.type === "tool_use");
        if (calls.length === 0) break;
        const results = [];
        for (const call of calls) {
          const tool = String(call.name).replace("mcp__ura__", "");
          const result = await client.callTool({
            name: tool,
            arguments: call.input ?? {},
            _meta: { "claudecode/toolUseId": call.id },
          });
          expect(result.isError).toBeFalsy();
          const parts = result.content as { type: string; text?: string; data?: string; mimeType?: string }[];
          results.push({
            type: "tool_result",
            tool_use_id: call.id,
            content: parts.map((p) =>
              p.type === "image"
                ? { type: "image", source: { type: "base64", media_type: p.mimeType, data: p.data } }
                : { type: "text", text: p.text ?? "" },
            ),
          });
        }
        messages.push({ role: "assistant", content }, { role: "user", content: results });
      }
    } finally {
      await client.close();
    }
    const status = await sidecar.episode(episode.id);
    expect(status.state).toBe("finished");
    expect(status.result).toMatchObject({ submitted: true, correct: true });

    // Secrets in use: the upstream key was sent upstream on every exchange; the others by the clients above.
    expect(upstream.scripted.received.at(-1)?.headers.authorization).toBe("<redacted>");
    const secrets: Record<string, string> = {
      "upstream API key": upstreamKey,
      "control password": controlPassword,
      ...Object.fromEntries(
        launched.flatMap((e) => [
          [`MCP token of ${e.id}`, e.mcp_token],
          [`ingress key of ${e.id}`, e.ingress_key],
        ]),
      ),
    };
    expect(Object.keys(secrets).length).toBeGreaterThanOrEqual(2 + 2 * 8);
    const files = listTree(dataDir).filter((p) => !p.endsWith("/"));
    expect(files).toContain(`episodes/${episode.id}/exchanges.jsonl`);
    expect(files).toContain(`episodes/${episode.id}/ledger.jsonl`);
    const haystacks: [string, string][] = [
      ["sidecar logs", sidecar.output()],
      ...files.map((f): [string, string] => [`data/${f}`, readFileSync(join(dataDir, f), "latin1")]),
    ];
    expect(sidecar.output()).toContain(episode.id); // the debug logs did cover this episode
    const found: string[] = [];
    for (const [where, text] of haystacks) {
      for (const [name, value] of Object.entries(secrets)) {
        if (text.includes(value)) found.push(`${name} in ${where}`);
      }
    }
    expect(found).toEqual([]);
    console.log(
      `security: secrets grep: ${Object.keys(secrets).length} secrets × ${haystacks.length} files/logs (${(haystacks.reduce((n, [, t]) => n + t.length, 0) / 1e6).toFixed(1)} MB)`,
    );
    expect(statSync(join(dataDir, "episodes", episode.id)).isDirectory()).toBe(true);
    checks += Object.keys(secrets).length * haystacks.length;
  });
});
