/**
 * Records rebuild what crossed the wire, byte for byte: the recorded real client
 * requests with images (one per client) go through the whole in-process app; the
 * client's body is rebuilt from the records and blobs and compared with the bytes
 * posted, and the upstream body with the bytes the upstream received. The record
 * lines themselves hold no image data, only references to blobs on disk.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { recordsCommand } from "../../src/cli/records-command.ts";
import { writePng } from "../../src/images/write-png.ts";
import { sha256Hex } from "../../src/lib/sha256.ts";
import { recordsFormatVersion } from "../../src/records/episode-records.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";

const fixturesDir = resolve(import.meta.dir, "../../fixtures");

type Case = {
  name: string;
  dir: string;
  route: (id: string) => string;
  headers: (key: string) => Record<string, string>;
};
const cases: Case[] = [
  {
    name: "OpenCode",
    dir: "responses/opencode-tool-image",
    route: (id) => `/e/${id}/v1/responses`,
    headers: (key) => ({ authorization: `Bearer ${key}` }),
  },
  {
    name: "Codex CLI",
    dir: "responses/codex-tool-image",
    route: (id) => `/e/${id}/v1/responses`,
    headers: (key) => ({ authorization: `Bearer ${key}` }),
  },
  {
    name: "Claude Code",
    dir: "messages/tool-result-image",
    route: (id) => `/e/${id}/anthropic/v1/messages?beta=true`,
    headers: (key) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
  },
  {
    name: "Gemini CLI",
    dir: "gemini/function-response-image",
    route: (id) => `/e/${id}/gemini/v1beta/models/${s.config.upstream.model}:streamGenerateContent?alt=sse`,
    headers: (key) => ({ "x-goog-api-key": key }),
  },
];

let s: InProcessSidecar;
const upstreamBodies: string[] = [];
beforeAll(async () => {
  s = await createInProcessSidecar({
    upstreamFetch: async (request) => {
      const text = await request.clone().text();
      upstreamBodies.push(text);
      return s.scripted.fetch(request);
    },
  });
});
afterAll(() => s.stop());

/** Every base64 image string (data URL or plain PNG/WebP base64) in a JSON text. */
function imageStrings(text: string): string[] {
  return [...text.matchAll(/"(?:data:image\/[a-z]+;base64,)?((?:iVBORw0KGgo|UklGR)[A-Za-z0-9+/]+=*)"/g)].map(
    (m) => m[1] as string,
  );
}

describe("records show the exact bytes of a recorded client request and of the upstream request", () => {
  for (const c of cases) {
    // The clients send compact JSON; the pretty-printed fixture file stands for any other text.
    for (const form of ["compact", "pretty-printed"] as const) {
      test(`${c.name}, ${form}`, async () => {
        const file = readFileSync(join(fixturesDir, c.dir, "client-request.json"), "utf8");
        const sent = form === "compact" ? JSON.stringify(JSON.parse(file)) : file;
        const episode = s.createEpisode();
        const before = upstreamBodies.length;
        const res = await s.app.request(c.route(episode.id), {
          method: "POST",
          headers: { "content-type": "application/json", ...c.headers(episode.ingressKey) },
          body: sent,
        });
        await res.text();
        expect(res.status).toBe(200);
        expect(upstreamBodies.length).toBe(before + 1);
        const wire = upstreamBodies.at(-1) as string;

        const records = openRecords(s.dataDir);
        const [exchange, ...more] = records.readEpisode(episode.id).exchanges;
        expect(more).toEqual([]);
        if (!exchange) throw new Error("no exchange recorded");
        expect(records.clientRequestText(exchange)).toBe(sent);
        expect(records.upstreamRequestText(exchange)).toBe(wire);

        // The images are blobs named by their SHA-256 (the client's PNG and the WebP sent), not line text.
        const images = [...imageStrings(sent), ...imageStrings(wire)];
        expect(images.length).toBeGreaterThanOrEqual(2);
        for (const base64 of images) {
          const digest = sha256Hex(Uint8Array.fromBase64(base64));
          expect(existsSync(join(s.dataDir, "blobs", "sha256", digest))).toBe(true);
        }
        const lines = readFileSync(join(episode.records.dir, "exchanges.jsonl"), "utf8");
        expect(imageStrings(lines)).toEqual([]);
        expect(lines).toContain('{"$blob":"sha256:');
        expect(
          lines
            .split("\n")
            .filter(Boolean)
            .every((line) => JSON.parse(line).v === recordsFormatVersion),
        ).toBe(true);

        // The same through the `records` command.
        const shown = async (...args: string[]) => {
          let text = "";
          const code = await recordsCommand(
            [...args, "--data-dir", s.dataDir],
            {},
            {
              write: async (chunk) => {
                text += chunk;
              },
              error: (message) => {
                throw new Error(message);
              },
            },
          );
          expect(code).toBe(0);
          return text;
        };
        expect(await shown("show", episode.id, "--exchange", "1")).toBe(sent);
        expect(await shown("show", episode.id, "--exchange", "ex_0001", "--part", "upstream")).toBe(wire);
        const exported = (await shown("export", episode.id, "--inline")).split("\n").filter(Boolean);
        expect(exported.join("\n")).not.toContain('"$blob"');
        const clientLine = JSON.parse(exported[0] as string);
        expect(clientLine.stage).toBe("client_request");
        expect(form === "compact" ? JSON.stringify(clientLine.body) : clientLine.body_text).toBe(sent);
      });
    }
  }
});

describe("long strings a client sends on every turn are recorded once", () => {
  test("Claude Code's system prompt and tool descriptions, sent twice and translated upstream: later copies are references, every body rebuilt byte for byte", async () => {
    const file = readFileSync(join(fixturesDir, "messages/main-turn/client-request.json"), "utf8");
    const sent = JSON.stringify(JSON.parse(file));
    const episode = s.createEpisode();
    const before = upstreamBodies.length;
    for (let turn = 0; turn < 2; turn++) {
      const res = await s.app.request(`/e/${episode.id}/anthropic/v1/messages?beta=true`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-api-key": episode.ingressKey,
          "anthropic-version": "2023-06-01",
        },
        body: sent,
      });
      await res.text();
      expect(res.status).toBe(200);
    }
    const wires = upstreamBodies.slice(before);
    expect(wires).toHaveLength(2);

    const lines = readFileSync(join(episode.records.dir, "exchanges.jsonl"), "utf8").split("\n");
    const bytesOf = (exchange: string, stage: string) =>
      lines.find((line) => line.includes(`"exchange":"${exchange}","stage":"${stage}"`))?.length ?? 0;
    // The second request repeats the first; its lines hold references, not the ~50 KB of long strings again.
    expect(bytesOf("ex_0002", "client_request")).toBeLessThan(sent.length * 0.5);
    expect(bytesOf("ex_0002", "upstream_request")).toBeLessThan((wires[1] as string).length * 0.5);
    // Within the first exchange the upstream body repeats the client's strings too.
    expect(bytesOf("ex_0001", "upstream_request")).toBeLessThan((wires[0] as string).length * 0.5);
    expect(lines.join("\n")).toContain('{"$text":"sha256:');
    expect(
      lines
        .filter(Boolean)
        .every((line) => JSON.parse(line).v === recordsFormatVersion && recordsFormatVersion >= 3),
    ).toBe(true);

    const records = openRecords(s.dataDir);
    const exchanges = records.readEpisode(episode.id).exchanges;
    expect(exchanges.map((exchange) => records.clientRequestText(exchange))).toEqual([sent, sent]);
    expect(exchanges.map((exchange) => records.upstreamRequestText(exchange))).toEqual(wires);
    // Readers see the strings, never a reference: parsed values as the client sent them.
    expect(exchanges[1]?.stage("client_request")?.value.body).toEqual(JSON.parse(sent));
    let exported = "";
    await recordsCommand(
      ["export", episode.id, "--inline", "--data-dir", s.dataDir],
      {},
      {
        write: async (chunk) => {
          exported += chunk;
        },
        error: (message) => {
          throw new Error(message);
        },
      },
    );
    expect(exported).not.toContain('"$text"');
    expect(JSON.parse(exported.split("\n")[0] as string).body).toEqual(JSON.parse(sent));
  });
});

/** A 4×4 PNG, different for each `n`, as base64: far below a long base64 string. */
function smallPng(n: number): string {
  const rows = new Uint8Array(4 * 4 * 3).map((_, i) => (i * 37 + n * 11) % 256);
  return writePng({ width: 4, height: 4, colourType: 2, bitDepth: 8, rows }).toBase64();
}

describe("a growing conversation, its resent history reused", () => {
  const growing: (Case & { grow: (body: Record<string, unknown[]>, n: number) => void })[] = [
    {
      ...(cases[2] as Case),
      dir: "messages/main-turn",
      grow: (body, n) =>
        body.messages?.push(
          { role: "assistant", content: [{ type: "text", text: `answer ${n} `.repeat(120) }] },
          // A small image (kept with its item, frozen: shorter than a long base64 string).
          {
            role: "user",
            content: [
              { type: "text", text: `question ${n}` },
              { type: "image", source: { type: "base64", media_type: "image/png", data: smallPng(n) } },
            ],
          },
        ),
    },
    {
      ...(cases[0] as Case),
      dir: "responses/opencode-agent-turn",
      grow: (body, n) =>
        body.input?.push(
          { role: "assistant", content: [{ type: "output_text", text: `answer ${n} `.repeat(120) }] },
          { role: "user", content: [{ type: "input_text", text: `question ${n}` }] },
        ),
    },
    {
      ...(cases[3] as Case),
      dir: "gemini/first-turn",
      grow: (body, n) =>
        body.contents?.push(
          { role: "model", parts: [{ text: `answer ${n} `.repeat(120) }] },
          { role: "user", parts: [{ text: `question ${n}` }] },
        ),
    },
  ];

  async function post(c: Case, episode: { id: string; ingressKey: string }, body: string): Promise<string> {
    const before = upstreamBodies.length;
    const res = await s.app.request(c.route(episode.id), {
      method: "POST",
      headers: { "content-type": "application/json", ...c.headers(episode.ingressKey) },
      body,
    });
    await res.text();
    expect(res.status).toBe(200);
    expect(upstreamBodies.length).toBe(before + 1);
    return upstreamBodies.at(-1) as string;
  }

  for (const c of growing) {
    test(`${c.name}: each turn's records rebuild its bytes, and its upstream body is a fresh episode's`, async () => {
      const body = JSON.parse(readFileSync(join(fixturesDir, c.dir, "client-request.json"), "utf8"));
      const episode = s.createEpisode();
      const sent: string[] = [];
      const wires: string[] = [];
      for (let turn = 0; turn < 6; turn++) {
        // Turn 4 edits an answer the client sent before (as a client compacting would).
        if (turn === 4) {
          const history = (body.messages ?? body.input ?? body.contents) as unknown[];
          const index = history.length - 4;
          const before = JSON.stringify(history[index]);
          expect(before).toContain("answer 2");
          history[index] = JSON.parse(before.replace("answer", "edited"));
        }
        const text = JSON.stringify(body);
        sent.push(text);
        wires.push(await post(c, episode, text));
        // The full path: the same body as a fresh episode's first request.
        expect(await post(c, s.createEpisode(), text)).toBe(wires.at(-1) as string);
        c.grow(body, turn);
      }
      const records = openRecords(s.dataDir);
      const exchanges = records.readEpisode(episode.id).exchanges;
      expect(exchanges.map((exchange) => records.clientRequestText(exchange))).toEqual(sent);
      expect(exchanges.map((exchange) => records.upstreamRequestText(exchange))).toEqual(wires);
    });
  }
});
