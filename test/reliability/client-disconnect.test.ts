/**
 * Client disconnect: a client that goes away while its answer is
 * being delivered leaves the answer's tool calls revoked — ledger `revoked`,
 * exchange status `revoked` — and a callback for them is refused over MCP.
 *   - In process, for every ingress: the client reads the first SSE frame (none
 *     for Gemini, whose answer is one frame) and cancels the body — deterministic,
 *     since frames are pulled one at a time.
 *   - Over a real socket against the compiled binary: the answer is larger than
 *     the loopback socket buffers (8 MiB of text before an observe call), and a
 *     raw TCP client closes the connection as soon as the first bytes arrive.
 * Control: a client that reads the whole answer can claim the call.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";
import { ingressKits, protocols, readJsonLines } from "../support/ingress-kit.ts";
import { sendRaw } from "../support/raw-http.ts";
import { type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

let tried = 0;
afterAll(() => console.log(`client disconnect: ${tried} cases`));

async function mcpCall(url: string, token: string, tool: string, args: Record<string, unknown>) {
  const client = new Client({ name: "ura-disconnect-test", version: "0.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  try {
    const result = await client.callTool({ name: tool, arguments: args });
    const text = ((result.content ?? []) as { type: string; text?: string }[])
      .map((p) => p.text ?? "")
      .join("\n");
    return { isError: result.isError === true, text };
  } finally {
    await client.close();
  }
}

/** The exchange's final status line and the ledger journal's event types, once the status is written. */
async function outcome(recordsDir: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const statuses = (await readJsonLines(join(recordsDir, "exchanges.jsonl"))).filter(
      (l) => l.stage === "status",
    );
    if (statuses.length > 0 || Date.now() > deadline) {
      const journal = await readJsonLines(join(recordsDir, "ledger.jsonl"));
      return { statuses, journal, types: journal.map((e) => e.type) };
    }
    await Bun.sleep(20);
  }
}

describe("in process: the client cancels the SSE body after the first frame", () => {
  let s: InProcessSidecar;
  let origin: string;
  beforeAll(async () => {
    s = await createInProcessSidecar();
    origin = s.serve();
  });
  afterAll(() => s.stop());

  for (const protocol of protocols) {
    const kit = ingressKits[protocol];
    const start = async () => {
      const episode = s.createEpisode();
      const res = await s.app.request(kit.path(episode.id, episode.model, true), {
        method: "POST",
        headers: { "content-type": "application/json", ...kit.headers(episode.ingressKey) },
        body: JSON.stringify(kit.firstTurn(true)),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/event-stream");
      return { episode, res };
    };

    test(`${protocol}: calls revoked, recorded revoked, the callback refused`, async () => {
      const { episode, res } = await start();
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      if (protocol !== "gemini") expect((await reader.read()).done).toBe(false);
      await reader.cancel(new Error("client went away"));

      const { statuses, journal, types } = await outcome(episode.records.dir);
      expect(statuses).toMatchObject([{ status: "revoked", batch: expect.any(String) }]);
      expect(types).toEqual(["registered", "revoked"]);
      const callId = ((journal[0]?.calls ?? []) as { id: string }[])[0]?.id;

      const refused = await mcpCall(`${origin}/e/${episode.id}/mcp`, episode.mcpToken, "observe", {});
      expect(refused.isError).toBe(true);
      expect(refused.text).toContain("refused");
      const byId = await mcpCall(`${origin}/e/${episode.id}/mcp`, episode.mcpToken, "observe", {
        _callID: callId,
      });
      expect(byId.isError).toBe(true);
      const after = await readJsonLines(join(episode.records.dir, "ledger.jsonl"));
      // By name and arguments a revoked call is no candidate at all; by its id it is named as revoked.
      expect(after.filter((e) => e.type === "refused").map((e) => e.code)).toEqual([
        expect.stringMatching(/^(no_match|revoked)$/),
        "revoked",
      ]);
      expect(after.some((e) => e.type === "claimed" || e.type === "submitted")).toBe(false);
      expect(episode.counters.revoked_exchanges).toBe(1);
      tried += 1;
    });

    test(`${protocol} control: a client that reads the whole answer can claim the call once`, async () => {
      const { episode, res } = await start();
      await res.text();
      const { statuses, types } = await outcome(episode.records.dir);
      expect(statuses).toMatchObject([{ status: "delivered" }]);
      expect(types).toEqual(["registered", "delivered"]);
      const claimed = await mcpCall(`${origin}/e/${episode.id}/mcp`, episode.mcpToken, "observe", {});
      expect(claimed.isError).toBe(false);
      tried += 1;
    });
  }
});

describe("compiled binary: a raw TCP client closes the socket after the first bytes of a large answer", () => {
  const bigText = "word ".repeat((8 * 1024 * 1024) / 5);
  let upstream: ReturnType<typeof Bun.serve>;
  let sidecar: SidecarProcess;
  beforeAll(async () => {
    // Plays Qwen: 8 MiB of text, then an observe call — far more than the socket buffers hold.
    upstream = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const body = (await req.json()) as { tools: { function: { name: string } }[] };
        const name = body.tools.map((t) => t.function.name).find((n) => n.endsWith("observe")) ?? "observe";
        const chunk = (delta: unknown, finish: string | null = null) =>
          `data: ${JSON.stringify({ id: "chatcmpl-big", object: "chat.completion.chunk", created: 0, model: "qwen", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        const frames = [
          chunk({ role: "assistant", content: "" }),
          chunk({ content: bigText }),
          chunk({
            tool_calls: [
              { index: 0, id: "call_big_0", type: "function", function: { name, arguments: "{}" } },
            ],
          }),
          chunk({}, "tool_calls"),
          "data: [DONE]\n\n",
        ];
        return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
      },
    });
    sidecar = await startSidecarProcess({
      upstreamUrl: `http://127.0.0.1:${upstream.port}/v1`,
      args: ["--log-level", "warn"],
    });
  });
  afterAll(async () => {
    await sidecar.stopCleanly();
    upstream.stop(true);
  });

  for (const protocol of protocols) {
    const kit = ingressKits[protocol];
    test(`${protocol}: revoked, recorded revoked, the callback refused`, async () => {
      const episode = await sidecar.createEpisode();
      const res = await sendRaw(
        sidecar.url,
        {
          method: "POST",
          target: kit.path(episode.id, "qwen3-vl-plus", true),
          headers: { "content-type": "application/json", ...kit.headers(episode.ingress_key) },
          body: JSON.stringify(kit.firstTurn(true)),
        },
        { closeAfterBytes: 1 },
      );
      expect(res.status).toBe(200);
      expect(res.closedEarly).toBe(true);

      const { statuses, types } = await outcome(episode.records_dir);
      expect(statuses).toMatchObject([{ status: "revoked" }]);
      expect(types).toEqual(["registered", "revoked"]);
      const refused = await mcpCall(episode.urls.mcp, episode.mcp_token, "observe", {
        _callID: "call_big_0",
      });
      expect(refused.isError).toBe(true);
      expect(refused.text).toContain("revoked");
      expect((await sidecar.episode(episode.id)).counters).toMatchObject({
        revoked_exchanges: 1,
        tool_calls_admitted: 0,
      });
      tried += 1;
    }, 30_000);
  }
});
