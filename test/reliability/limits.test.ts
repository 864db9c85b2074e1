/**
 * Resource limits, against the compiled binary: an upstream answer over
 * upstream.max_response_bytes is an upstream fault with nothing delivered; a
 * manifest that is invalid, refers to an unknown `$ref` or nests absurdly deep is
 * refused at episode creation (400 naming the tool and the schema path) instead
 * of failing at MCP initialize; episode.json is written compact.
 * Needs `make build` (dist/ura-sidecar).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  callBack,
  cannedUpstreamForFile,
  exchangesOf,
  hardenedSidecarFor,
  ledgerOf,
  mcpClient,
  responsesTurn,
  textOf,
} from "../support/hardening-kit.ts";

setDefaultTimeout(60_000);

const upstream = cannedUpstreamForFile();
const sidecar = hardenedSidecarFor(upstream);

test("an upstream answer over the default max_response_bytes (32 MiB) is an upstream fault, nothing delivered", async () => {
  const episode = await sidecar.createEpisode();
  upstream.reset();
  upstream.reply({ kind: "text", text: "z".repeat(40 * 1024 * 1024) });
  const res = await responsesTurn(episode);
  const text = await res.text();
  expect(res.status).not.toBe(200);
  expect(text.length).toBeLessThan(10_000);
  expect(text.replaceAll("\u200b", "")).toContain("max_response_bytes");
  expect(exchangesOf(episode).find((l) => l.stage === "status")).toMatchObject({
    status: "failed",
    error: { kind: "upstream_invalid" },
  });
});

const manifest = (inputSchema: unknown) =>
  JSON.stringify({
    server: "ura",
    finish_tool: "finish",
    tools: [
      {
        name: "finish",
        description: "finish",
        input_schema: { type: "object", properties: { answer: { type: "string" } } },
        mode: "foreground",
        route: "finish",
      },
      { name: "grasp", description: "grasp", input_schema: "SCHEMA", mode: "foreground", route: "grasp" },
    ],
  }).replace('"SCHEMA"', asText(inputSchema));

/** As JSON text: a value this deep cannot be serialised by JSON.stringify (its recursion overflows). */
function deepSchema(depth: number): string {
  return `${'{"type":"object","properties":{"a":'.repeat(depth)}{"type":"string"}${"}}".repeat(depth)}`;
}
const asText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

describe("manifests are checked at episode creation", () => {
  for (const [name, schema, says] of [
    ["an invalid JSON Schema", { type: "object", properties: { x: { type: "strnig" } } }, /grasp.*compile/],
    ["an unknown $ref", { type: "object", properties: { x: { $ref: "#/$defs/missing" } } }, /grasp.*compile/],
    ["a 20,000-deep schema", deepSchema(20_000), /grasp.*deeper than/],
  ] as const) {
    test(`${name}: 400 naming the tool and the schema path`, async () => {
      const res = await sidecar.control("/episodes", {
        method: "POST",
        body: `{"manifest":${manifest(schema)}}`,
      });
      const body = (await res.json()) as { error?: { message?: string; param?: string } };
      expect(res.status).toBe(400);
      expect(body.error?.param).toBe("manifest.tools[1].input_schema");
      expect(body.error?.message).toMatch(says);
    });
  }

  test("a valid manifest is accepted and episode.json is compact", async () => {
    const res = await sidecar.control("/episodes", {
      method: "POST",
      body: `{"manifest":${manifest(deepSchema(8))}}`,
    });
    expect(res.status).toBe(201);
    const { records_dir } = (await res.json()) as { records_dir: string };
    const text = readFileSync(join(records_dir, "episode.json"), "utf8");
    expect(text).not.toContain("\n ");
    expect(JSON.parse(text)).toMatchObject({ state: "running" });
  });
});

test("an MCP callback with arguments over the MCP SDK's 4 MiB default is accepted up to body_limit_bytes", async () => {
  const episode = await sidecar.createEpisode();
  upstream.reset();
  const nonce = "n".repeat(5 * 1024 * 1024);
  upstream.calls({ id: "call_large", name: "ura_record", arguments: JSON.stringify({ nonce }) });
  const turn = await responsesTurn(episode);
  expect(turn.status).toBe(200);
  // A 5 MiB answer outgrows the socket buffers: it is delivered (and its call claimable) only once the client reads it.
  expect(await turn.text()).toContain("call_large");
  const client = await mcpClient(episode);
  const result = await callBack(client, "record", { nonce }, "call_large");
  await client.close();
  expect(textOf(result)).not.toMatch(/Payload Too Large|413/);
  expect(
    ledgerOf(episode)
      .filter((e) => e.type === "claimed")
      .map((e) => e.callId),
  ).toEqual(["call_large"]);
});

describe("MCP sessions", () => {
  const slow = hardenedSidecarFor(upstream, {
    executor: { kind: "inert", ack_delay_ms: 0, receipt_delay_ms: 1500 },
  });

  test("a 17th session never evicts a session whose call is running: that call still gets its result", async () => {
    const episode = await slow.createEpisode();
    upstream.reset();
    upstream.calls({ id: "call_slow", name: "ura_observe", arguments: "{}" });
    expect((await responsesTurn(episode)).status).toBe(200);
    const busy = await mcpClient(episode);
    const running = callBack(busy, "observe", {}, "call_slow");
    await Bun.sleep(200);
    const others = [];
    for (let i = 0; i < 16; i++) others.push(await mcpClient(episode));
    const result = await running;
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toContain("nonce");
    for (const client of [busy, ...others]) await client.close().catch(() => {});
  });
});
