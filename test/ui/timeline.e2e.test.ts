/**
 * The /ui timeline pages in a real browser: Debian's Chromium driven by
 * playwright-core (never a downloaded browser), over the records of the four
 * clients' smoke episodes as `ura-sidecar validate --all` recorded them with the
 * real CLIs, served by the compiled binary restarted on that data directory.
 * Asserts the login, the episode list, each timeline (exchanges, the client's PNG
 * next to the WebP sent, every tool call with its ledger transitions and
 * receipt) against the records, live updates of a running episode, and saves a
 * screenshot per client under dist/ui-screenshots/. Needs `make build`.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { BrowserContext } from "playwright-core";
import { clientNames } from "../../src/clients/client-manifests.ts";
import { openChromium } from "../support/chromium.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { controlPassword, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";
import { runValidate } from "../support/validate-run.ts";

const timeoutMs = 600_000;
const screenshots = resolve(import.meta.dir, "../../dist/ui-screenshots");

type Line = Record<string, unknown>;
const jsonLines = (path: string): Line[] =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Line);

let sidecar: SidecarProcess | undefined;
let browser: BrowserContext | undefined;
afterAll(async () => {
  await browser?.close();
  await sidecar?.stop();
});

describeInLoopbackNamespace("the /ui timeline in Chromium", { file: import.meta.path, timeoutMs }, () => {
  test(
    "the four clients' recorded smoke episodes: login, list, timelines, images, tool calls, live updates",
    async () => {
      const run = await runValidate(["--all"]);
      if (run.code !== 0) console.error(`${run.stdout}\n${run.stderr}`);
      expect(run.code).toBe(0);
      const episodes = clientNames.map((client) => {
        const status = JSON.parse(readFileSync(join(run.out, client, "episode-status.json"), "utf8")) as {
          id: string;
          records_dir: string;
        };
        return { client, id: status.id, dir: status.records_dir };
      });
      // The binary restarts on validate's data directory: the episodes are restored read-only.
      sidecar = await startSidecarProcess({ dataDir: join(run.out, "data"), args: ["--default-episode"] });
      const base = sidecar.url;
      browser = await openChromium();
      const page = await browser.newPage();

      // Nothing of an episode without the password.
      const anonymous = await fetch(`${base}/ui/episodes/${episodes[0]?.id}`);
      expect(anonymous.status).toBe(401);
      expect(await anonymous.text()).not.toContain(episodes[0]?.id ?? "?");
      await page.goto(`${base}/ui`);
      expect(new URL(page.url()).pathname).toBe("/ui/login");
      await page.fill("input[name=password]", "wrong");
      await page.click("button[type=submit]");
      expect(await page.textContent("body")).toContain("Wrong password.");
      await page.fill("input[name=password]", controlPassword);
      await page.click("button[type=submit]");
      expect(new URL(page.url()).pathname).toBe("/ui");
      const cookie = (await browser.cookies()).find((c) => c.name === "ura_ui");
      expect(cookie?.httpOnly).toBe(true);
      expect(cookie?.value).not.toContain(controlPassword);

      for (const { client, id } of episodes) {
        const row = page.locator(`tr[data-episode="${id}"]`);
        expect(await row.locator("td").nth(1).textContent()).toBe("finished");
        expect(await row.locator("td").nth(2).textContent()).toBe(client);
      }

      mkdirSync(screenshots, { recursive: true });
      for (const { client, id, dir } of episodes) {
        await page.goto(`${base}/ui/episodes/${id}`);
        expect(await page.textContent("#episode-state")).toBe("finished");
        const exchanges = jsonLines(join(dir, "exchanges.jsonl"));
        const ids = [...new Set(exchanges.map((l) => String(l.exchange)))];
        expect(await page.locator("section[data-exchange]").evaluateAll((s) => s.map((e) => e.id))).toEqual(
          ids,
        );
        for (const exchange of ids) {
          const status = exchanges.findLast((l) => l.exchange === exchange && l.stage === "status");
          expect(await page.locator(`section#${exchange} h2`).textContent()).toContain(
            String(status?.status),
          );
        }

        // Every delivered call, with each of its ledger transitions, the receipt last.
        const ledger = jsonLines(join(dir, "ledger.jsonl"));
        const calls = ledger
          .filter((e) => e.type === "registered")
          .flatMap((e) =>
            (e.calls as { id: string; tool: string }[]).map((c) => ({ ...c, exchange: e.batchId })),
          );
        expect(calls.map((c) => c.tool).sort()).toEqual(["finish", "observe", "record", "record"]);
        for (const call of calls) {
          const shown = page.locator(`section#${String(call.exchange)} div[data-call="${call.id}"]`);
          expect(await shown.locator("strong").textContent()).toBe(call.tool);
          const transitions = await shown.locator("li").evaluateAll((lis) => lis.map((li) => li.className));
          const recorded = ledger.filter((e) => e.callId === call.id).map((e) => String(e.type));
          for (const type of ["registered", "delivered", ...recorded]) expect(transitions).toContain(type);
          expect(transitions.at(-1)).toBe("receipt");
        }

        // The observed PNG as the client sent it, next to the WebP that went upstream; both load.
        const client_ = page.locator('figure[data-side="client"] img');
        const upstream = page.locator('figure[data-side="upstream"] img');
        expect(await client_.count()).toBeGreaterThanOrEqual(1);
        expect(await upstream.count()).toBeGreaterThanOrEqual(1);
        await page.waitForFunction(() => {
          const images = (globalThis as unknown as { document: { images: { naturalWidth: number }[] } })
            .document.images;
          return [...images].every((img) => img.naturalWidth > 0);
        });
        const captions = await page.locator("figcaption").allTextContents();
        expect(captions.some((c) => c.startsWith("client image/png"))).toBe(true);
        expect(captions.some((c) => c.startsWith("sent upstream image/webp"))).toBe(true);
        const src = await upstream.first().getAttribute("src");
        const webp = await page.request.get(`${base}${src}`);
        expect(webp.headers()["content-type"]).toBe("image/webp");
        expect((await webp.body()).subarray(8, 12).toString()).toBe("WEBP");

        await page.screenshot({ path: join(screenshots, `${client}.png`), fullPage: true });
      }

      // A running episode updates live: a new exchange appears without a reload by the test.
      const live = await sidecar.createEpisode({ client: "codex" });
      await page.goto(`${base}/ui/episodes/${live.id}`);
      expect(await page.locator("section[data-exchange]").count()).toBe(0);
      const answer = await fetch(`${live.urls.responses}/responses`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${live.ingress_key}` },
        body: JSON.stringify({ model: "m", input: "go", stream: false }),
      });
      expect(answer.status).toBe(200);
      await page.waitForSelector("section[data-exchange]", { timeout: 10_000 });
      expect(await page.locator("section[data-exchange] h2").first().textContent()).toContain("delivered");
    },
    timeoutMs,
  );
});
