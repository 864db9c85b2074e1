/**
 * The `path` every ingress records (docs/records.md): the request path as received,
 * from `/e/<episode>` on, with its query except a `key` parameter (Gemini CLI may
 * send its API key there). Checked on the auxiliary lines of Gemini's countTokens and
 * Anthropic's count_tokens and on the client_request lines of a model exchange of
 * each protocol, in process (test/support/in-process-sidecar.ts).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Episode } from "../../src/episodes/episode.ts";
import { records } from "../support/episode-evidence.ts";
import { createInProcessSidecar, type InProcessSidecar, postJson } from "../support/in-process-sidecar.ts";

let s: InProcessSidecar;
beforeAll(async () => {
  s = await createInProcessSidecar();
});
afterAll(() => s.stop());

const recordedPaths = (episode: Episode, file: "exchanges" | "auxiliary") =>
  records(episode.records.dir, file)
    .filter((line) => file === "auxiliary" || line.stage === "client_request")
    .map((line) => line.path);

const geminiTurn = { contents: [{ role: "user", parts: [{ text: "go" }] }] };
const messagesTurn = { model: "ura-qwen", max_tokens: 64, messages: [{ role: "user", content: "go" }] };

test("Gemini: countTokens and an exchange record the full path, the key left out of the query", async () => {
  const episode = s.createEpisode({ max_turns: 0, model: "qwen3-vl-plus" });
  const models = `/e/${episode.id}/gemini/v1beta/models/qwen3-vl-plus`;
  const key = `key=${episode.ingressKey}`;
  expect((await postJson(s.app, `${models}:countTokens?${key}`, geminiTurn, {})).status).toBe(400);
  const turn = await postJson(s.app, `${models}:streamGenerateContent?alt=sse&${key}`, geminiTurn, {});
  await turn.text();
  expect(recordedPaths(episode, "auxiliary")).toEqual([`${models}:countTokens`]);
  expect(recordedPaths(episode, "exchanges")).toEqual([`${models}:streamGenerateContent?alt=sse`]);
});

test("Anthropic: count_tokens and an exchange record the full path with its query", async () => {
  const episode = s.createEpisode({ max_turns: 0 });
  const messages = `/e/${episode.id}/anthropic/v1/messages`;
  const headers = { "x-api-key": episode.ingressKey };
  expect((await postJson(s.app, `${messages}/count_tokens?beta=true`, messagesTurn, headers)).status).toBe(
    400,
  );
  await (await postJson(s.app, `${messages}?beta=true`, messagesTurn, headers)).text();
  expect(recordedPaths(episode, "auxiliary")).toEqual([`${messages}/count_tokens?beta=true`]);
  expect(recordedPaths(episode, "exchanges")).toEqual([`${messages}?beta=true`]);
});

test("Responses: compact and an exchange record the full path", async () => {
  const episode = s.createEpisode({ max_turns: 0 });
  const responses = `/e/${episode.id}/v1/responses`;
  const headers = { authorization: `Bearer ${episode.ingressKey}` };
  const turn = { model: "ura-qwen", input: "go" };
  expect((await postJson(s.app, `${responses}/compact`, turn, headers)).status).toBe(400);
  await (await postJson(s.app, responses, turn, headers)).text();
  expect(recordedPaths(episode, "auxiliary")).toEqual([`${responses}/compact`]);
  expect(recordedPaths(episode, "exchanges")).toEqual([responses]);
});
