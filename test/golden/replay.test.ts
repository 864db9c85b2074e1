/**
 * Golden replay of recorded exchanges (fixtures exported from an episode's records by
 * fixtures/golden/export-case.ts): the recorded client request goes through the whole
 * sidecar in process, the recorded upstream answer is played back for its upstream
 * request, and both what went upstream and what the client got must equal the
 * recording byte for byte. The replay hands the sidecar the clock and generated ids of
 * the recording (meta.json `replay`), so any other difference is a change of behaviour:
 * review it, then record the cases again (fixtures/golden/record-smoke-cases.ts).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { ReplaySettings } from "../../fixtures/golden/export-case.ts";
import { clientManifests, clientNames } from "../../src/clients/client-manifests.ts";
import { createRandomIds, type Ids } from "../../src/lib/ids.ts";
import type { ModelDeclaration } from "../../src/models/model-capabilities.ts";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";
import { ingressKits, type ProtocolName, protocols } from "../support/ingress-kit.ts";

const fixturesDir = resolve(import.meta.dir, "../../fixtures");

type Meta = {
  source: string;
  client: string;
  protocol: ProtocolName;
  path: string;
  model: string;
  content_type: string;
  headers: Record<string, string>;
  replay: ReplaySettings;
  /**
   * What the recording sidecar's model table said of `model`, where it differs from
   * today's (upstream.models): a recording keeps the upstream request of its day.
   */
  model_declaration?: ModelDeclaration;
};

const cases = protocols.flatMap((protocol) =>
  readdirSync(join(fixturesDir, protocol))
    .map((name) => join(fixturesDir, protocol, name))
    .filter((dir) => existsSync(join(dir, "meta.json")))
    .map((dir) => ({ dir, meta: JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")) as Meta }))
    .filter((c) => c.meta.source === "records"),
);

/** The recording's generated ids first, in order; random ones after (a replay needing more fails on bytes). */
function replayIds(generated: readonly string[]): Ids {
  const random = createRandomIds();
  const queue = [...generated];
  return { ...random, callId: () => queue.shift() ?? random.callId() };
}

async function replay(dir: string, meta: Meta) {
  const upstreamAnswer = readFileSync(join(dir, "upstream-response.txt"), "utf8");
  const sentUpstream: string[] = [];
  const sidecar: InProcessSidecar = await createInProcessSidecar({
    ...(meta.model_declaration
      ? { config: { upstream: { models: { [meta.model]: meta.model_declaration } } } }
      : {}),
    ids: replayIds(meta.replay.generated_ids),
    clock: () => meta.replay.clock_ms,
    upstreamFetch: async (request) => {
      sentUpstream.push(await request.text());
      return new Response(upstreamAnswer, { headers: { "content-type": "text/event-stream" } });
    },
  });
  try {
    const episode = sidecar.createEpisode({ max_turns: 0, model: meta.model });
    const response = await sidecar.app.request(`/e/${episode.id}${meta.path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": meta.headers["user-agent"] ?? "",
        ...ingressKits[meta.protocol].headers(episode.ingressKey),
      },
      body: readFileSync(join(dir, "client-request.json")),
    });
    return { response, body: await response.text(), sentUpstream };
  } finally {
    sidecar.stop();
  }
}

describe("golden replay of recorded exchanges", () => {
  test("every client has a recorded tool-call turn that carries an image", () => {
    const withImage = cases.filter(
      (c) =>
        readFileSync(join(c.dir, "upstream-request.json"), "utf8").includes('"image_url"') &&
        readFileSync(join(c.dir, "upstream-response.txt"), "utf8").includes('"tool_calls"'),
    );
    expect(new Set(withImage.map((c) => c.meta.client))).toEqual(new Set(clientNames));
  });

  for (const { dir, meta } of cases) {
    test(`${meta.protocol}/${dir.split("/").at(-1)}: same upstream request, same client response, byte for byte`, async () => {
      expect(clientManifests[meta.client as keyof typeof clientManifests].protocol).toBe(meta.protocol);
      const { response, body, sentUpstream } = await replay(dir, meta);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe(meta.content_type);
      expect(sentUpstream).toEqual([readFileSync(join(dir, "upstream-request.json"), "utf8")]);
      expect(body).toBe(readFileSync(join(dir, "client-response.txt"), "utf8"));
    });
  }
});
