import { describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cameraLikePng } from "../../src/images/synthetic-frames.ts";
import { createScriptedUpstream } from "../../src/scripted-upstream/create-scripted-upstream.ts";
import { createUiRoutes } from "../../src/ui/ui-routes.tsx";
import { cannedSse } from "../support/canned-upstream.ts";
import { imageTurnRequest } from "../support/image-turn.ts";
import { createInProcessSidecar, type InProcessOptions, postJson } from "../support/in-process-sidecar.ts";

const password = "ui-test-password-0123456789";

async function ui(options: InProcessOptions = {}) {
  const sidecar = await createInProcessSidecar(options);
  const app = createUiRoutes({
    episodes: sidecar.episodes,
    dataDir: sidecar.dataDir,
    controlPassword: password,
  });
  const login = await app.request("/login", {
    method: "POST",
    body: new URLSearchParams({ password }),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  });
  const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  return { sidecar, app, login, get: (path: string) => app.request(path, { headers: { cookie } }) };
}

describe("/ui routes", () => {
  test("login: a wrong password sets no cookie; the right one an HttpOnly, SameSite=Strict cookie without the password", async () => {
    const { app, login } = await ui();
    const wrong = await app.request("/login", {
      method: "POST",
      body: new URLSearchParams({ password: "nope" }),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(wrong.status).toBe(303);
    expect(wrong.headers.get("location")).toBe("/ui/login?failed");
    expect(wrong.headers.get("set-cookie")).toBeNull();
    expect(login.status).toBe(303);
    const cookie = login.headers.get("set-cookie") ?? "";
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).not.toContain(password);
  });

  test("nothing without the cookie: a page redirects to the login, anything else is 401", async () => {
    const { app, sidecar } = await ui();
    const episode = sidecar.createEpisode();
    const page = await app.request(`/episodes/${episode.id}`, { headers: { accept: "text/html" } });
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/ui/login");
    const image = await app.request(`/episodes/${episode.id}/exchanges/ex_0001/images/client/0`);
    expect(image.status).toBe(401);
    expect(await image.text()).not.toContain(episode.id);
  });

  test("the list pages by 50, newest first; an unknown episode is 404", async () => {
    const { get, sidecar } = await ui();
    for (let i = 0; i < 55; i++) sidecar.createEpisode();
    const rows = async (path: string) =>
      ((await (await get(path)).text()).match(/<tr data-episode=/g) ?? []).length;
    expect(await rows("/")).toBe(50);
    expect(await rows("/?page=2")).toBe(5);
    expect(await rows("/?page=99")).toBe(5);
    expect((await get("/episodes/ep_0000000000000000")).status).toBe(404);
  });

  test("the episode page shows the client's own session id, from the header the client sent", async () => {
    const { get, sidecar } = await ui();
    const episode = sidecar.createEpisode();
    const before = await (await get(`/episodes/${episode.id}`)).text();
    expect(before).toContain("the client sent no session id of its own");
    const session = "ses_dd3d58791ffe8nqMMcpl1h3Pyi";
    const res = await postJson(
      sidecar.app,
      `/e/${episode.id}/v1/responses`,
      { model: "ura-qwen", input: "hello", stream: false },
      {
        authorization: `Bearer ${episode.ingressKey}`,
        "user-agent": "opencode/1.18.33 ai-sdk/provider-utils/4.0.40 runtime/bun/1.3.14",
        "x-session-id": session,
      },
    );
    expect(res.status).toBe(200);
    await res.text();
    expect(episode.describe().client_identity).toMatchObject({
      session_ids: [session],
      session_header: "x-session-id",
    });
    const page = await (await get(`/episodes/${episode.id}`)).text();
    expect(page).toContain(`client session <code>${session}</code> (x-session-id)`);
    // And the exchange's record names it beside the request.
    const lines = readFileSync(join(sidecar.dataDir, "episodes", episode.id, "exchanges.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { stage: string; client_session?: string });
    expect(lines.find((l) => l.stage === "client_request")?.client_session).toBe(session);
  });

  test("an exchange shows its tokens and what the provider's prompt cache served", async () => {
    const scripted = createScriptedUpstream({ readPixel: async () => [0, 0, 0] });
    const { get, sidecar } = await ui({ upstreamFetch: scripted.fetch });
    const episode = sidecar.createEpisode();
    const long = "Describe the table in front of the robot, object by object. ".repeat(40);
    const first = { type: "message", role: "user", content: [{ type: "input_text", text: long }] };
    const send = async (input: object[]) => {
      const res = await postJson(
        sidecar.app,
        `/e/${episode.id}/v1/responses`,
        { model: "ura-qwen", input, stream: false },
        { authorization: `Bearer ${episode.ingressKey}` },
      );
      expect(res.status).toBe(200);
      return (await res.json()) as {
        usage: { input_tokens: number; input_tokens_details: { cached_tokens: number } };
      };
    };
    const one = await send([first]);
    expect(one.usage.input_tokens_details.cached_tokens).toBe(0);
    const answer = { type: "message", role: "assistant", content: [{ type: "output_text", text: "A cup." }] };
    const two = await send([first, answer, { type: "message", role: "user", content: "And now?" }]);
    // The second turn extends the first: its prompt up to the first answer is served from the cache.
    expect(two.usage.input_tokens_details.cached_tokens).toBeGreaterThan(256);
    const page = await (await get(`/episodes/${episode.id}`)).text();
    expect(page).toContain(`tokens: ${one.usage.input_tokens} in (0 cached, 0%)`);
    const share = Math.round((100 * two.usage.input_tokens_details.cached_tokens) / two.usage.input_tokens);
    expect(page).toContain(
      `tokens: ${two.usage.input_tokens} in (${two.usage.input_tokens_details.cached_tokens} cached, ${share}%)`,
    );
  });

  test("images are served by digest from the blob store alone: they still load with the record files gone", async () => {
    const { get, app: ui_, sidecar } = await ui();
    const episode = sidecar.createEpisode();
    const png = cameraLikePng(64, 48, 7);
    const res = await postJson(
      sidecar.app,
      `/e/${episode.id}/v1/responses`,
      imageTurnRequest("what do you see?", [png.toBase64()]),
      { authorization: `Bearer ${episode.ingressKey}` },
    );
    expect(res.status).toBe(200);
    await res.text();
    const page = await (await get(`/episodes/${episode.id}`)).text();
    const sources = [...page.matchAll(/<img[^>]* src="([^"]+)"/g)].map((m) => m[1] as string);
    expect(sources).toHaveLength(2);
    const digests = sources.map((src) => /^\/ui\/blobs\/([0-9a-f]{64})$/.exec(src)?.[1]);
    expect(digests.every((d) => d !== undefined)).toBe(true);
    // Each image request reads one blob, not the episode's records: remove them.
    const dir = join(sidecar.dataDir, "episodes", episode.id);
    for (const file of ["exchanges.jsonl", "ledger.jsonl", "auxiliary.jsonl"])
      rmSync(join(dir, file), { force: true });
    const [client, upstream] = await Promise.all(sources.map((src) => get(src.slice("/ui".length))));
    expect(client?.headers.get("content-type")).toBe("image/png");
    expect(new Uint8Array(await (client as Response).arrayBuffer())).toEqual(new Uint8Array(png));
    expect(upstream?.headers.get("content-type")).toBe("image/webp");
    const webp = new Uint8Array(await (upstream as Response).arrayBuffer());
    expect(webp).toEqual(
      new Uint8Array(readFileSync(join(sidecar.dataDir, "blobs", "sha256", digests[1] as string))),
    );
    expect(upstream?.headers.get("cache-control")).toContain("immutable");
    // Not a digest, a digest with no blob, and no cookie.
    expect((await get("/blobs/not-a-digest")).status).toBe(404);
    expect((await get(`/blobs/${"0".repeat(64)}`)).status).toBe(404);
    expect((await ui_.request(`/blobs/${digests[0]}`)).status).toBe(401);
  });

  test("an exchange shows its wait in the shared upstream queue, its throttled attempts and its retries", async () => {
    let releaseFirst = () => {};
    const held = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    let calls = 0;
    const answer = () =>
      new Response(cannedSse({ kind: "text", text: "done" }), {
        headers: { "content-type": "text/event-stream" },
      });
    const { get, sidecar } = await ui({
      config: {
        upstream: {
          budget: { max_concurrent: 1 },
          retry: { max_attempts: 2, initial_backoff_ms: 1 },
        },
      },
      upstreamFetch: async () => {
        calls += 1;
        if (calls === 1) {
          await held;
          return answer();
        }
        if (calls === 2)
          return new Response(JSON.stringify({ error: { message: "Requests rate limit exceeded" } }), {
            status: 429,
          });
        return answer();
      },
    });
    const first = sidecar.createEpisode();
    const second = sidecar.createEpisode();
    const send = (episode: typeof first) =>
      postJson(
        sidecar.app,
        `/e/${episode.id}/v1/responses`,
        { model: "qwen", input: "go", stream: false },
        {
          authorization: `Bearer ${episode.ingressKey}`,
        },
      );
    const one = send(first);
    while (calls < 1) await Bun.sleep(5);
    const two = send(second);
    await Bun.sleep(150);
    expect(calls).toBe(1); // the second episode waits for its turn
    releaseFirst();
    expect((await one).status).toBe(200);
    expect((await two).status).toBe(200);
    const page = await (await get(`/episodes/${second.id}`)).text();
    const waits = /waited (\d+) ms in the shared queue · 1 throttled · 1 retry</.exec(page);
    expect(Number(waits?.[1])).toBeGreaterThanOrEqual(100);
    expect(page).toMatch(
      /upstream attempt 1: queued \d+ ms, HTTP 429 in \d+ ms, http_error — the upstream throttled the request: requests per minute \(HTTP 429\): Requests rate limit exceeded, retry in/,
    );
    const quiet = await (await get(`/episodes/${first.id}`)).text();
    expect(quiet).not.toContain("shared queue");
  });
});
