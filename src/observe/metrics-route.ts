/**
 * GET /metrics: the Prometheus text exposition, behind the control password
 * (Authorization: Bearer, as the control API): metric values tell how a robot
 * lab works, and the sidecar's one listener is reachable by the agent CLIs.
 * Prometheus sends it with `authorization: { credentials_file: … }`.
 */
import { Hono } from "hono";
import { credentialMatches } from "../lib/credentials.ts";
import { SidecarError, sidecarErrorResponse } from "../lib/errors.ts";
import type { Metrics } from "./metrics.ts";

export function createMetricsRoute(metrics: Metrics, controlPassword: string): Hono {
  const app = new Hono();
  app.get("/", async (c) => {
    const bearer = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
    if (!credentialMatches(bearer, controlPassword)) {
      const refusal = sidecarErrorResponse(
        new SidecarError(
          "authentication",
          "metrics: missing or wrong password (Authorization: Bearer $URA_CONTROL_PASSWORD)",
        ),
      );
      refusal.headers.set("www-authenticate", 'Bearer realm="ura-sidecar metrics"');
      return refusal;
    }
    return c.body(await metrics.render(), 200, { "content-type": metrics.contentType });
  });
  return app;
}
