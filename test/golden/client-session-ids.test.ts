/**
 * Each client's own session id, read from the headers it really sent (the recorded
 * fixtures' meta.json): the header its manifest names, and the same id on every request
 * of one run. Gemini CLI (API key) sends none.
 */
import { describe, expect, test } from "bun:test";
import { type ClientName, clientManifests } from "../../src/clients/client-manifests.ts";
import { createClientIdentity, type McpSeen } from "../../src/episodes/client-identity.ts";
import { fixtureCases } from "../support/fixture-cases.ts";

const mcp: McpSeen = { initialized: true, tools_listed: true };

/** The session ids an episode keeps from these recorded requests, in order. */
function sessionIdsOf(client: ClientName, recorded: Record<string, string>[]) {
  const identity = createClientIdentity({
    episodeId: "ep_1",
    expected: client,
    requirePinned: false,
    mcpRequired: "warn",
  });
  const returned = recorded.map((headers) => identity.checkModelRequest(new Headers(headers), mcp));
  const status = identity.describe(mcp);
  return { returned, ids: status.session_ids, header: status.session_header };
}

const cases: { client: ClientName; protocol: "responses" | "messages" | "gemini"; names: string[] }[] = [
  { client: "claude", protocol: "messages", names: ["main-turn", "tool-result-image"] },
  {
    client: "claude",
    protocol: "messages",
    names: ["claude-2.1.332-main-turn", "claude-2.1.332-tool-result-image"],
  },
  { client: "codex", protocol: "responses", names: ["codex-namespace-turn", "codex-tool-image"] },
  { client: "opencode", protocol: "responses", names: ["opencode-title", "opencode-agent-turn"] },
];

describe("a client's own session id, from its recorded requests", () => {
  for (const { client, protocol, names } of cases) {
    test(`${client} (${names.join(", ")}): one id, from ${clientManifests[client].session_headers[0]}`, () => {
      const fixtures = fixtureCases(protocol);
      const headers = names.map((name) => fixtures.meta(name).headers);
      const header = clientManifests[client].session_headers[0] ?? "";
      const sent = headers[0]?.[header];
      expect(sent).toMatch(/^[A-Za-z0-9_-]{8,}$/);
      expect(sessionIdsOf(client, headers)).toEqual({
        returned: names.map(() => sent),
        ids: [sent as string],
        header,
      });
    });
  }

  test("Codex: thread-id is the id (its session-id header carries the same one)", () => {
    const headers = fixtureCases("responses").meta("codex-namespace-turn").headers;
    expect(headers["thread-id"]).toBe(headers["session-id"] as string);
  });

  test("Gemini CLI sends no session id: none is kept, none made up", () => {
    const fixtures = fixtureCases("gemini");
    const headers = ["first-turn", "function-response-image"].map((name) => fixtures.meta(name).headers);
    expect(clientManifests.gemini.session_headers).toEqual([]);
    expect(sessionIdsOf("gemini", headers)).toEqual({
      returned: [undefined, undefined],
      ids: [],
      header: null,
    });
  });

  test("two runs of one client in one episode: both ids, in order", () => {
    const messages = fixtureCases("messages");
    const first = messages.meta("main-turn").headers;
    const second = messages.meta("claude-2.1.332-main-turn").headers;
    const { ids } = sessionIdsOf("claude", [first, second, first]);
    expect(ids).toEqual([first, second].map((h) => String(h["x-claude-code-session-id"])));
  });
});
