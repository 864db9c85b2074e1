import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { failedAttempt } from "../../test/support/exchange-line-fields.ts";
import { loadCodecs } from "../images/codecs.ts";
import { webpSettingsSchema } from "../images/settings.ts";
import { imagesSent, isLosslessWebp, readUpstreamExchanges } from "./upstream-evidence.ts";

const codecs = await loadCodecs();
const image = { width: 2, height: 2, data: new Uint8Array(16).fill(200) };
const webp = codecs.encodeWebpLossless(image, webpSettingsSchema.parse({}));
const hex = new Bun.CryptoHasher("sha256").update(webp).digest("hex");

function episodeDir(): string {
  const data = mkdtempSync(join(tmpdir(), "ura-evidence-"));
  const records = join(data, "episodes", "ep_1");
  mkdirSync(records, { recursive: true });
  mkdirSync(join(data, "blobs", "sha256"), { recursive: true });
  writeFileSync(join(data, "blobs", "sha256", hex), webp);
  return records;
}

describe("upstream evidence from the records", () => {
  test("a lossless WebP is told from a PNG and from a lossy (VP8) WebP", () => {
    expect(isLosslessWebp(webp)).toBe(true);
    const lossy = new Uint8Array(webp);
    lossy.set(new TextEncoder().encode("VP8 "), 12);
    expect(isLosslessWebp(lossy)).toBe(false);
    expect(isLosslessWebp(new Uint8Array([0x89, 0x50, 0x4e, 0x47]))).toBe(false);
  });

  test("images are read from data URLs and from blob references, with their message's role", () => {
    const records = episodeDir();
    const body = {
      messages: [
        { role: "tool", content: "ok" },
        {
          role: "user",
          content: [
            { type: "text", text: "frame" },
            {
              type: "image_url",
              image_url: { url: `data:image/webp;base64,${Buffer.from(webp).toString("base64")}` },
            },
            {
              type: "image_url",
              image_url: { url: { $blob: `sha256:${hex}`, media_type: "image/webp", bytes: webp.length } },
            },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          ],
        },
      ],
    };
    const images = imagesSent(body, records);
    expect(images.map((i) => [i.role, i.mediaType, i.bytes ? isLosslessWebp(i.bytes) : null])).toEqual([
      ["user", "image/webp", true],
      ["user", "image/webp", true],
      ["user", "image/png", false],
    ]);
  });

  test("each recorded upstream request is paired with its recorded answer or refusal", () => {
    const records = episodeDir();
    const lines = [
      { exchange: "x1", stage: "client_request" },
      { exchange: "x1", stage: "upstream_request", body: { model: "m", messages: [] } },
      { exchange: "x1", stage: "upstream_response", validated: { text: "hi", toolCalls: [] } },
      { exchange: "x2", stage: "upstream_request", body: { model: "m", messages: [] } },
      { exchange: "x2", stage: "upstream_response", error: 'undeclared tool "rm"' },
    ];
    writeFileSync(join(records, "exchanges.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
    expect(readUpstreamExchanges(records)).toEqual([
      { exchange: "x1", body: { model: "m", messages: [] }, response: { text: "hi", toolCalls: [] } },
      { exchange: "x2", body: { model: "m", messages: [] }, response: { error: 'undeclared tool "rm"' } },
    ]);
  });

  test("an exchange cancelled before any answer has none, in a line of today and in one of before its `cancelled` member", () => {
    const records = episodeDir();
    const request = (exchange: string) => ({ exchange, stage: "upstream_request", body: { model: "m" } });

    const message = "upstream request cancelled: the client closed the request";
    const lines = [
      request("x1"),
      {
        exchange: "x1",
        stage: "upstream_response",
        attempts: [failedAttempt],
        raw: null,
        error: message,
        cancelled: { at: "backoff", reason: "client_closed" },
      },
      request("x2"),
      { exchange: "x2", stage: "upstream_response", attempts: [failedAttempt], raw: null, error: message },
      request("x3"),
      { exchange: "x3", stage: "upstream_response", attempts: [failedAttempt], raw: null, error: "HTTP 503" },
    ];
    writeFileSync(join(records, "exchanges.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
    expect(readUpstreamExchanges(records).map((e) => [e.exchange, e.response])).toEqual([
      ["x1", null],
      ["x2", null],
      ["x3", { error: "HTTP 503" }],
    ]);
  });
});
