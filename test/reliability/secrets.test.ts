/**
 * What a client can learn: never a configured secret. Against the compiled
 * binary with a canned upstream that echoes the bearer it was sent (in a 401
 * message, a mid-stream error frame, an answer's text): the client's answer and
 * error envelope never carry it, in any protocol. A secret with `"` and `\` is
 * also kept out of the records in its JSON-escaped form, and a secret so short
 * or plain that redacting it would damage records is refused at start-up.
 * Needs `make build` (dist/ura-sidecar).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cannedUpstreamForFile, hardenedSidecarFor, responsesTurn } from "../support/hardening-kit.ts";
import { ingressKits, protocols } from "../support/ingress-kit.ts";
import { type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

setDefaultTimeout(30_000);

/** A key with the characters JSON escapes, so its escaped form differs from the raw one. */
const key = 'sk-live-"quoted"\\back\\slash-7f3a9c2e41';
const escaped = JSON.stringify(key).slice(1, -1);

const upstream = cannedUpstreamForFile();
const sidecar = hardenedSidecarFor(upstream, {}, { env: { URA_UPSTREAM_API_KEY: key } });

const echoes = () => [
  {
    kind: "status" as const,
    status: 401,
    body: JSON.stringify({ error: { message: `Incorrect API key: ${key}` } }),
  },
  {
    kind: "raw" as const,
    body: `data: ${JSON.stringify({ error: { message: `invalid argument, auth was Bearer ${key}` } })}\n\n`,
  },
  { kind: "text" as const, text: `The header said Bearer ${key}.` },
];

describe("the upstream key never reaches a client", () => {
  for (const protocol of protocols) {
    test(`${protocol}: a 401 echo, a mid-stream error echo, an answer echoing it`, async () => {
      const kit = ingressKits[protocol];
      for (const reply of echoes()) {
        const episode = await sidecar.createEpisode();
        upstream.reset();
        upstream.reply(reply);
        const res = await fetch(`${sidecar.url}${kit.path(episode.id, "qwen3-vl-plus", false)}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...kit.headers(episode.ingress_key) },
          body: JSON.stringify(kit.firstTurn(false)),
        });
        const text = await res.text();
        expect(upstream.received[0]?.headers.authorization).toBe(`Bearer ${key}`);
        for (const form of [key, escaped, "quoted", "7f3a9c2e41"]) expect(text).not.toContain(form);
        expect(text).toContain("<redacted>");
      }
    });
  }

  test("the records hold neither the key nor its JSON-escaped form", async () => {
    const episode = await sidecar.createEpisode();
    upstream.reset();
    upstream.reply(echoes()[0] as typeof echoes extends () => (infer R)[] ? R : never);
    await (await responsesTurn(episode)).text();
    const records = readFileSync(join(episode.records_dir, "exchanges.jsonl"), "utf8");
    expect(records).toContain("Incorrect API key");
    expect(records).not.toContain(key);
    expect(records).not.toContain(escaped);
    expect(records).not.toContain("7f3a9c2e41");
  });
});

describe("secrets that redaction would turn into damage are refused at start-up", () => {
  for (const [name, env] of [
    ["a common word as the control password", { URA_CONTROL_PASSWORD: "record" }],
    ["a short upstream key", { URA_UPSTREAM_API_KEY: "sk-1" }],
  ] as const) {
    test(name, async () => {
      let refusal = "";
      let started: SidecarProcess | undefined;
      try {
        started = await startSidecarProcess({ upstreamUrl: upstream.url, env });
      } catch (error) {
        refusal = (error as Error).message;
      }
      await started?.stop("SIGKILL");
      expect(refusal).toMatch(/exit 2/);
      expect(refusal).toMatch(new RegExp(Object.keys(env)[0] as string));
      expect(refusal).toMatch(/too short|too weak/);
      for (const value of Object.values(env)) expect(refusal).not.toContain(`"${value}"`);
    });
  }
});
