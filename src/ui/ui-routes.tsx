/**
 * GET /ui: the episode list and each episode's timeline, read from the records.
 * Nothing of an episode is visible without the control password: POST /ui/login
 * checks it and sets an HttpOnly, SameSite=Strict cookie holding an HMAC of the
 * password (never the password itself), which every other /ui request must carry.
 * Images are served by URL, never inlined into the page: an image in the blob store
 * by its digest (one file read, cacheable for good: the name is the content), one
 * kept inline in a record line (older records) from that line. Calls awaiting an
 * operator's approval are decided here too (POST …/approvals/{call_id}, the same
 * checks and journal as the control API, `by: "ui"`; docs/approvals.md): the
 * SameSite=Strict cookie keeps another site's page from posting a decision.
 */
import { join } from "node:path";
import { type Context, Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { decideApproval, parseApprovalDecision, viewPendingApproval } from "../control/approvals.ts";
import type { EpisodeStore } from "../episodes/episode-store.ts";
import { credentialMatches } from "../lib/credentials.ts";
import { SidecarError, sidecarErrorResponse } from "../lib/errors.ts";
import { blobDigestPattern } from "../records/blob-store.ts";
import { sniffImageType } from "../records/image-references.ts";
import { openRecords } from "../records/read-records.ts";
import { EpisodeListPage, type EpisodeRow, type LatestImage, LoginPage, TimelinePage } from "./pages.tsx";
import { exchangeImage, readTimeline, recordsStamp, type Timeline } from "./read-timeline.ts";

export type UiDeps = {
  episodes: EpisodeStore;
  dataDir: string;
  controlPassword: string;
  /** Milliseconds since the epoch (how long a call has waited); default Date.now. */
  clock?: () => number;
};

/** How many of the latest client images a pending approval shows. */
const latestImageCount = 2;

/** The last images of the newest exchange that has any: what the model saw just before its calls. */
function latestImages(episode: string, timeline: Timeline): LatestImage[] {
  const exchange = timeline.exchanges.findLast((x) => x.clientImages.length > 0);
  if (exchange === undefined) return [];
  const first = Math.max(0, exchange.clientImages.length - latestImageCount);
  return exchange.clientImages.slice(first).map((image, i) => ({
    src:
      image.kind === "blob"
        ? `/ui/blobs/${image.digest}`
        : `/ui/episodes/${episode}/exchanges/${exchange.id}/images/client/${first + i}`,
    mediaType: image.mediaType,
    bytes: image.bytes,
  }));
}

const cookieName = "ura_ui";
const episodesPerPage = 50;
const exchangesPerPage = 20;

function sessionToken(password: string): string {
  return new Bun.CryptoHasher("sha256", password).update("ura-sidecar ui session").digest("base64url");
}

function pageOf(value: string | undefined, pages: number): number {
  const n = Number.parseInt(value ?? "1", 10);
  return Number.isFinite(n) ? Math.min(Math.max(n, 1), Math.max(pages, 1)) : 1;
}

export function createUiRoutes(deps: UiDeps): Hono {
  const app = new Hono();
  const records = openRecords(deps.dataDir);
  const token = sessionToken(deps.controlPassword);
  const clock = deps.clock ?? Date.now;
  app.onError((err, c) => {
    const error = err instanceof SidecarError ? err : new SidecarError("internal", err.message);
    return c.text(error.message, error.status as 404);
  });

  app.get("/login", (c) => c.html(<LoginPage failed={c.req.query("failed") !== undefined} />));
  app.post("/login", async (c) => {
    const form = await c.req.parseBody();
    const password = typeof form.password === "string" ? form.password : undefined;
    if (!credentialMatches(password, deps.controlPassword)) return c.redirect("/ui/login?failed", 303);
    setCookie(c, cookieName, token, { httpOnly: true, sameSite: "Strict", path: "/ui" });
    return c.redirect("/ui", 303);
  });
  app.use("*", async (c, next) => {
    if (!credentialMatches(getCookie(c, cookieName), token)) {
      if (c.req.header("accept")?.includes("text/html")) return c.redirect("/ui/login", 303);
      return sidecarErrorResponse(new SidecarError("authentication", "sign in at /ui/login"));
    }
    c.header("cache-control", "no-store");
    await next();
  });

  app.get("/", (c) => {
    const all = deps.episodes
      .list()
      .map((e) => e.describe())
      .sort((a, b) => b.created_at.localeCompare(a.created_at));
    const pages = Math.ceil(all.length / episodesPerPage);
    const page = pageOf(c.req.query("page"), pages);
    const rows: EpisodeRow[] = all.slice((page - 1) * episodesPerPage, page * episodesPerPage).map((e) => ({
      id: e.id,
      state: e.state,
      client: e.client ?? e.client_identity.expected ?? "unknown",
      model: e.model,
      turns: e.counters.delivered_exchanges,
      toolCalls: e.ledger.calls,
      failures: e.counters.failed_exchanges + e.ledger.refusedCallbacks,
      awaitingApproval: e.ledger.awaitingApproval.length,
      cost: e.cost ? `${e.cost.total} ${e.cost.currency}` : "",
      createdAt: e.created_at,
    }));
    return c.html(<EpisodeListPage rows={rows} page={page} pages={pages} total={all.length} />);
  });

  const episodeDir = (id: string) => {
    const episode = deps.episodes.get(id);
    return { episode, dir: episode.describe().records_dir ?? join(deps.dataDir, "episodes", id) };
  };

  app.get("/episodes/:id", (c) => {
    const { episode, dir } = episodeDir(c.req.param("id"));
    const timeline = readTimeline(records, dir);
    const pages = Math.ceil(timeline.exchanges.length / exchangesPerPage);
    const page = pageOf(c.req.query("page"), pages);
    const exchanges = timeline.exchanges.slice((page - 1) * exchangesPerPage, page * exchangesPerPage);
    const now = clock();
    const approvals = episode.ledger.pendingApprovals().map((p) => viewPendingApproval(p, now));
    const approvalError = c.req.query("approval_error");
    return c.html(
      <TimelinePage
        episode={episode.describe() as unknown as Record<string, unknown>}
        timeline={timeline}
        page={page}
        pages={pages}
        exchanges={exchanges}
        approvals={approvals}
        latestImages={approvals.length > 0 ? latestImages(episode.id, timeline) : []}
        {...(approvalError ? { approvalError } : {})}
      />,
    );
  });
  /** A decision from the page's forms; back to the page, with why when it changed nothing. */
  app.post("/episodes/:id/approvals/:call_id", async (c) => {
    const { episode } = episodeDir(c.req.param("id"));
    const form = await c.req.parseBody();
    const field = (name: string) => {
      const value = form[name];
      return typeof value === "string" && value !== "" ? value : undefined;
    };
    const page = `/ui/episodes/${episode.id}`;
    try {
      const body = parseApprovalDecision({
        decision: field("decision"),
        ...(field("reason") === undefined ? {} : { reason: field("reason") }),
        ...(field("args_sha256") === undefined ? {} : { args_sha256: field("args_sha256") }),
      });
      decideApproval(episode, c.req.param("call_id"), body, "ui");
      return c.redirect(page, 303);
    } catch (error) {
      if (!(error instanceof SidecarError) || error.kind === "internal") throw error;
      return c.redirect(`${page}?approval_error=${encodeURIComponent(error.message)}`, 303);
    }
  });
  app.get("/episodes/:id/stamp", (c) => {
    const { episode, dir } = episodeDir(c.req.param("id"));
    return c.json({ stamp: recordsStamp(dir), state: episode.state });
  });
  const blobResponse = (c: Context, digest: string) => {
    if (!blobDigestPattern.test(digest) || !records.blobs.has(digest)) return c.notFound();
    const bytes = new Uint8Array(records.blobs.read(digest));
    // From the bytes, never from a request: the store holds only images, and nothing else is rendered.
    c.header("content-type", sniffImageType(bytes) ?? "application/octet-stream");
    c.header("x-content-type-options", "nosniff");
    c.header("cache-control", "private, max-age=31536000, immutable");
    return c.body(bytes);
  };
  app.get("/blobs/:digest", (c) => blobResponse(c, c.req.param("digest")));
  app.get("/episodes/:id/exchanges/:exchange/images/:side/:n", (c) => {
    const { dir } = episodeDir(c.req.param("id"));
    const side = c.req.param("side");
    if (side !== "client" && side !== "upstream") return c.notFound();
    const image = exchangeImage(records, dir, c.req.param("exchange"), side, Number(c.req.param("n")));
    if (!image) return c.notFound();
    if (image.kind === "blob") return blobResponse(c, image.digest);
    c.header("content-type", image.mediaType);
    c.header("cache-control", "private, max-age=86400, immutable");
    return c.body(Buffer.from(image.base64, "base64"));
  });
  return app;
}
