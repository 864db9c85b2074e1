/**
 * The control API: create, list, inspect and cancel episodes. Authenticated with
 * the control password (Bearer), compared in constant time.
 */
import { Hono } from "hono";
import { describeZodError } from "../config/load-config.ts";
import type { Episode } from "../episodes/episode.ts";
import { episodeOptionsSchema } from "../episodes/episode-options.ts";
import type { CancelledEpisode, EpisodeList } from "../episodes/episode-status.ts";
import type { EpisodeStore } from "../episodes/episode-store.ts";
import { credentialMatches } from "../episodes/ids.ts";
import { SidecarError } from "../lib/errors.ts";
import { manifestProblem } from "../mcp/tool-validators.ts";
import type { ShippingStatus } from "../shipping/shipper.ts";

export type ControlDeps = {
  episodes: EpisodeStore;
  controlPassword: string;
  /** Starts a graceful shutdown (POST /control/shutdown). */
  shutdown: () => void;
  /** The episode's record shipping status (absent when shipping is off). */
  shippingStatus?: (id: string) => ShippingStatus | null;
};

function errorBody(error: SidecarError) {
  return { error: { type: error.kind, message: error.message, param: error.param ?? null } };
}

export function createControlRoutes(deps: ControlDeps) {
  const app = new Hono();
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
    const text = await c.req.text();
    let body: unknown = {};
    if (text.trim() !== "") {
      try {
        body = JSON.parse(text);
      } catch {
        throw new SidecarError("invalid_request", "request body is not valid JSON");
      }
    }
    const parsed = episodeOptionsSchema.safeParse(body);
    if (!parsed.success) throw new SidecarError("invalid_request", describeZodError(parsed.error).join("; "));
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
  app.post("/shutdown", (c) => {
    setTimeout(deps.shutdown, 0);
    return c.json({ shutting_down: true }, 202);
  });
  return app;
}
