import { describe, expect, test } from "bun:test";
import { createUiRoutes } from "../../src/ui/ui-routes.tsx";
import { createInProcessSidecar } from "../support/in-process-sidecar.ts";

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
});
