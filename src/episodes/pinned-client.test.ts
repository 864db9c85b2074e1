/**
 * Version pins and the MCP-connected check through the real app (in-process
 * sidecar, scripted upstream): the 400s reach the client in its own envelope and
 * the episode status reports what was detected.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clientManifests } from "../clients/client-manifests.ts";
import { loadConfig } from "../config/load-config.ts";
import { type Sidecar, startSidecar } from "../server/start-sidecar.ts";

let sidecar: Sidecar;
const logs: string[] = [];
beforeAll(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-pinned-"));
  sidecar = await startSidecar({
    config: loadConfig({ listen: "127.0.0.1:0", "data-dir": dataDir }, {}),
    secrets: { upstreamApiKey: undefined, controlPassword: "pw-0123456789abcdef" },
    version: "test",
    out: () => {},
    logWrite: (line) => logs.push(line),
  });
});
afterAll(() => sidecar.shutdown("test done"));

const opencodeUa = (version: string) => `opencode/${version} ai-sdk/provider-utils/4.0.40 runtime/bun/1.3.14`;

async function responses(episodeId: string, key: string, userAgent: string) {
  return fetch(`${sidecar.baseUrl()}/e/${episodeId}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "user-agent": userAgent },
    body: JSON.stringify({ model: "ura-qwen", input: "hello", stream: false }),
  });
}

test("require_pinned_client: another OpenCode version gets a final 400 naming both versions; the pinned one is served", async () => {
  const episode = sidecar.episodes.create({ max_turns: 0, client: "opencode", require_pinned_client: true });
  const refused = await responses(episode.id, episode.ingressKey, opencodeUa("1.2.3"));
  expect(refused.status).toBe(400);
  const body = (await refused.json()) as { error: { message: string } };
  expect(body.error.message).toContain("require_pinned_client");
  expect(body.error.message).toContain("opencode 1.2.3");
  expect(body.error.message).toContain("opencode-ai@1.18.33");
  expect(episode.describe().client_identity).toMatchObject({
    pinned: false,
    flags: ["unpinned_client"],
  });

  const served = await responses(episode.id, episode.ingressKey, opencodeUa("1.18.33"));
  expect(served.status).toBe(200);
  expect(episode.describe().client_identity).toMatchObject({
    pinned: true,
    model_client: { client: "opencode", version: "1.18.33" },
  });
});

test("off by default: another version is served and reported as not pinned; the missing MCP side is logged", async () => {
  const episode = sidecar.episodes.create({ max_turns: 0, client: "opencode" });
  const before = logs.length;
  expect((await responses(episode.id, episode.ingressKey, opencodeUa("1.2.3"))).status).toBe(200);
  expect(episode.describe().client_identity).toMatchObject({
    pinned: false,
    require_pinned_client: false,
    mcp_connected: false,
    model_requests_without_mcp: 1,
  });
  expect(logs.slice(before).some((l) => l.includes("never connected") && l.includes(episode.id))).toBe(true);
});

test("require_pinned_client accepts every proven version, not only the pin: Claude Code at an earlier proven version is served", async () => {
  const { version, proven_versions } = clientManifests.claude;
  const earlier = proven_versions.find((v) => v !== version);
  expect(earlier).toBeDefined();
  const episode = sidecar.episodes.create({ max_turns: 0, client: "claude", require_pinned_client: true });
  const messages = (ua: string) =>
    fetch(`${sidecar.baseUrl()}/e/${episode.id}/anthropic/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": episode.ingressKey, "content-type": "application/json", "user-agent": ua },
      body: JSON.stringify({
        model: "ura-qwen",
        max_tokens: 64,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
  const served = await messages(`claude-cli/${earlier} (external, sdk-cli)`);
  expect(served.status).toBe(200);
  expect(episode.describe().client_identity).toMatchObject({
    pinned: true,
    pinned_version: version,
    proven_versions,
    model_client: { client: "claude", version: earlier },
  });
  const refused = await messages("claude-cli/2.1.198 (external, sdk-cli)");
  expect(refused.status).toBe(400);
  const body = (await refused.json()) as { type: string; error: { message: string } };
  expect(body.type).toBe("error");
  expect(body.error.message).toContain("claude 2.1.198, not a proven version");
});
