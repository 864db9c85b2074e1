/**
 * The control API: create, list, inspect and cancel episodes, and decide the tool
 * calls that await an operator's approval. Authenticated with the control password
 * (Bearer), compared in constant time.
 */
import { Hono } from "hono";
import { describeZodError } from "../config/load-config.ts";
import type { Episode } from "../episodes/episode.ts";
import { episodeOptionsSchema } from "../episodes/episode-options.ts";
import type { CancelledEpisode, EpisodeList } from "../episodes/episode-status.ts";
import type { EpisodeStore } from "../episodes/episode-store.ts";
import { credentialMatches } from "../lib/credentials.ts";
import { SidecarError } from "../lib/errors.ts";
import { manifestProblem } from "../mcp/tool-validators.ts";
import type { ShippingStatus } from "../shipping/shipper.ts";
import { decideApproval, parseApprovalDecision, viewPendingApproval } from "./approvals.ts";

export type ControlDeps = {
  episodes: EpisodeStore;
  controlPassword: string;
  /** Starts a graceful shutdown (POST /control/shutdown). */
  shutdown: () => void;
  /** The episode's record shipping status (absent when shipping is off). */
  shippingStatus?: (id: string) => ShippingStatus | null;
  /** Milliseconds since the epoch (how long a call has waited for approval); default Date.now. */
  clock?: () => number;
};

function errorBody(error: SidecarError) {
  return { error: { type: error.kind, message: error.message, param: error.param ?? null } };
}

export function createControlRoutes(deps: ControlDeps) {
  const app = new Hono();
  const clock = deps.clock ?? Date.now;
  const readJson = async (text: string): Promise<unknown> => {
    if (text.trim() === "") return {};
    try {
      return JSON.parse(text);
    } catch {
      throw new SidecarError("invalid_request", "request body is not valid JSON");
    }
  };
  app.onError((err, c) => {
    const error = err instanceof SidecarError ? err : new SidecarError("internal", err.message);
    return c.json(errorBody(error), error.status as 400);
  });
  app.use("*", async (c, next) => {
    const bearer = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
    if (!credentialMatches(bearer, deps.controlPassword)) {
      throw new SidecarError(
        "authentication",
        "control API: missing or wrong password (Authorization: Bearer $URA_CONTROL_PASSWORD)",
      );
    }
    await next();
  });
  app.post("/episodes", async (c) => {
    const body = await readJson(await c.req.text());
    const parsed = episodeOptionsSchema.safeParse(body);
    if (!parsed.success) {
      const path = parsed.error.issues[0]?.path ?? [];
      throw new SidecarError("invalid_request", describeZodError(parsed.error).join("; "), {
        ...(path.length > 0 ? { param: paramOf(path) } : {}),
      });
    }
    const problem = parsed.data.manifest && manifestProblem(parsed.data.manifest);
    if (problem) throw new SidecarError("invalid_request", problem.message, { param: problem.param });
    const episode = deps.episodes.create(parsed.data);
    return c.json(deps.episodes.launchInfo(episode), 201);
  });
  const describe = (episode: Episode) =>
    deps.shippingStatus
      ? { ...episode.describe(), shipping: deps.shippingStatus(episode.id) }
      : episode.describe();
  app.get("/episodes", (c) => c.json({ episodes: deps.episodes.list().map(describe) } satisfies EpisodeList));
  app.get("/episodes/:id", (c) => c.json(describe(deps.episodes.get(c.req.param("id")))));
  /** The launch info again, credentials included (`ura-sidecar client-config --episode <id>`). */
  app.get("/episodes/:id/launch", (c) =>
    c.json(deps.episodes.launchInfo(deps.episodes.get(c.req.param("id")))),
  );
  app.post("/episodes/:id/cancel", async (c) => {
    const episode = deps.episodes.get(c.req.param("id"));
    const drained = await episode.cancel();
    return c.json({ ...episode.describe(), drain: drained } satisfies CancelledEpisode);
  });
  /** The episode's calls awaiting an operator's decision, oldest first. */
  app.get("/episodes/:id/approvals", (c) => {
    const episode = deps.episodes.get(c.req.param("id"));
    const now = clock();
    return c.json({ approvals: episode.ledger.pendingApprovals().map((p) => viewPendingApproval(p, now)) });
  });
  /** Approve or reject one call: `{decision, reason, args_sha256?}`; 409 when it changes nothing. */
  app.post("/episodes/:id/approvals/:call_id", async (c) => {
    const episode = deps.episodes.get(c.req.param("id"));
    const body = parseApprovalDecision(await readJson(await c.req.text()));
    return c.json(decideApproval(episode, c.req.param("call_id"), body, "api"));
  });
  app.post("/shutdown", (c) => {
    setTimeout(deps.shutdown, 0);
    return c.json({ shutting_down: true }, 202);
  });
  return app;
}

/** A zod issue path in the wire spelling of the API's errors: `manifest.tools[0].approval`. */
function paramOf(path: readonly PropertyKey[]): string {
  return path
    .map((key, i) => (typeof key === "number" ? `[${key}]` : `${i === 0 ? "" : "."}${String(key)}`))
    .join("");
}
