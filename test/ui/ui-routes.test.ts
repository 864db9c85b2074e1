import { describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cameraLikePng } from "../../src/images/synthetic-frames.ts";
import { createUiRoutes } from "../../src/ui/ui-routes.tsx";
import { imageTurnRequest } from "../support/image-turn.ts";
import { createInProcessSidecar, postJson } from "../support/in-process-sidecar.ts";

const password = "ui-test-password-0123456789";

async function ui() {
  const sidecar = await createInProcessSidecar();
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
});
