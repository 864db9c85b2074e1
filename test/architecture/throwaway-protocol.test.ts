/**
 * The "add a protocol" walkthrough of docs/architecture.md, followed once by hand
 * and kept as a test so it stays true (the other two walkthroughs:
 * throwaway-stage.test.ts, throwaway-context-policy.test.ts). "Tiny" is a throwaway JSON protocol, built step by step as the walkthrough
 * says (schema, to-hub, from-hub, errors, route), mounted as a route group the way
 * the shipped spokes are, and driven with app.request() through the real pipeline
 * against the in-process scripted upstream: the whole exchange must be recorded and
 * delivered, and a bad field refused in Tiny's own envelope, naming the field.
 */
import { describe, expect, test } from "bun:test";
import type { Hono } from "hono";
import { z } from "zod";
import type { BodyEnv } from "../../src/body/body-variables.ts";
import type { JsonBody } from "../../src/body/parse-json-body.ts";
import { parseJsonBody } from "../../src/body/parse-json-body.ts";
import type { Translation } from "../../src/exchange/exchange-contract.ts";
import type { Protocol } from "../../src/hub/protocol.ts";
import type { HubMessage, HubRequest, HubResponse } from "../../src/hub/schema.ts";
import { hubRequestSchema } from "../../src/hub/schema.ts";
import { authenticateRequest } from "../../src/ingress/authenticate-ingress.ts";
import type { IngressRouteDeps } from "../../src/ingress/ingress-route-deps.ts";
import { parseRequestBody } from "../../src/ingress/parse-at.ts";
import { createProtocolRoutes } from "../../src/ingress/protocol-routes.ts";
import { type ErrorKind, SidecarError } from "../../src/lib/errors.ts";
import { records } from "../support/episode-evidence.ts";
import { createInProcessSidecar, postJson } from "../support/in-process-sidecar.ts";

// Step 1, the name. Adding "tiny" to protocolSchema (src/hub/protocol.ts) is a production
// edit a throwaway cannot make; the one place it is needed here is the spec's protocol.
const tiny = "tiny" as Protocol;

// Step 2, schema.ts: strict, so a misspelt field is refused, naming it.
const tinyRequestSchema = z.strictObject({
  model: z.string(),
  say: z.array(z.strictObject({ who: z.enum(["user", "model"]), text: z.string() })).min(1),
  tools: z.array(z.strictObject({ name: z.string().min(1), about: z.string().default("") })).optional(),
});
type TinyRequest = z.infer<typeof tinyRequestSchema>;
// The episode's memos (body.memos) let a member the client resends unchanged skip validation.
const parseRequest = (body: JsonBody): TinyRequest => parseRequestBody(tinyRequestSchema, body, "Tiny");

// Step 4, from-hub.ts (pure); Tiny does not stream.
type TinyAnswer = { model: string; text: string | null; calls: { id: string; tool: string; args: string }[] };
const fromHub = (response: HubResponse, echoed: { model: string }): TinyAnswer => ({
  model: echoed.model,
  text: response.text,
  calls: response.toolCalls.map((call) => ({ id: call.id, tool: call.name, args: call.arguments })),
});

// Step 3, to-hub.ts (pure): the hub request, and a render closure holding only what is echoed.
function toHub(body: JsonBody): Translation {
  const request = parseRequest(body);
  const messages: HubMessage[] = request.say.map((line) =>
    line.who === "user"
      ? { role: "user", content: [{ type: "text", text: line.text }] }
      : { role: "assistant", text: line.text, toolCalls: [] },
  );
  const hub: HubRequest = {
    model: request.model,
    messages,
    tools: (request.tools ?? []).map((tool) => ({
      name: tool.name,
      description: tool.about,
      parameters: { type: "object" },
    })),
    ignored: [],
  };
  const echoed = { model: request.model };
  return {
    hub,
    render: (response) => ({
      contentType: "application/json",
      chunks: [JSON.stringify(fromHub(response, echoed))],
    }),
  };
}

// Step 5, errors.ts: every kind mapped, a new kind a compile error.
function statusOf(kind: ErrorKind): number {
  switch (kind) {
    case "invalid_request":
    case "request_too_large":
    case "episode_closed":
    case "upstream_rejected":
    case "conflict":
      return 400;
    case "authentication":
      return 401;
    case "not_found":
      return 404;
    case "upstream_transient":
    case "unavailable":
      return 503;
    case "upstream_invalid":
    case "internal":
      return 500;
    default: {
      const never: never = kind;
      throw new Error(`unknown error kind ${String(never)}`);
    }
  }
}
const renderError = (error: SidecarError): Response =>
  Response.json(
    { fault: { kind: error.kind, message: error.message, field: error.param ?? null } },
    { status: statusOf(error.kind) },
  );

// Step 6, route.ts: the protocol's parts to createProtocolRoutes, then its one route.
function createRoutes(deps: IngressRouteDeps): Hono<BodyEnv> {
  const routes = createProtocolRoutes(deps, { protocol: tiny, renderError });
  routes.models(
    "/tiny/models",
    (models) => ({ models: models.map((model) => model.id) }),
    (model) => ({ id: model.id }),
  );
  routes.refuse(
    "/tiny/count",
    "count",
    () => new SidecarError("invalid_request", "Tiny counts nothing here"),
  );
  routes.app.post("/tiny/chat", async (c) => {
    const episode = authenticateRequest(deps.episodes, c);
    const body = await routes.body(c, episode);
    return routes.exchange(c, episode, body, () => toHub(body));
  });
  return routes.app;
}

// Step 7, registration: a route group, as in episode-route-groups.ts.
const tinyGroup = { paths: "/tiny/*", body: "split" as const, routes: createRoutes };

async function tinySidecar() {
  const sidecar = await createInProcessSidecar({ episodeRoutes: [tinyGroup] });
  const episode = sidecar.createEpisode({ max_turns: 0 });
  const post = (body: unknown) =>
    postJson(sidecar.app, `/e/${episode.id}/tiny/chat`, body, {
      authorization: `Bearer ${episode.ingressKey}`,
    });
  return { ...sidecar, episode, post };
}

describe("a throwaway protocol built by the walkthrough", () => {
  test("toHub gives a valid hub request (pure, no server)", () => {
    const { hub } = toHub(parseJsonBody(JSON.stringify({ model: "m", say: [{ who: "user", text: "hi" }] })));
    expect(hubRequestSchema.parse(hub)).toEqual(hub);
  });

  test("one whole exchange: recorded stage by stage and delivered in Tiny's form", async () => {
    const sidecar = await tinySidecar();
    try {
      const res = await sidecar.post({
        model: "ura-qwen",
        say: [{ who: "user", text: "Look around." }],
        // Robot tools under a pinned client's naming scheme (src/clients/tool-names.ts), or the
        // ledger does not know them as the robot's.
        tools: ["observe", "record", "finish"].map((name) => ({ name: `mcp__ura__${name}`, about: name })),
      });
      expect(res.status).toBe(200);
      const answer = (await res.json()) as TinyAnswer;
      expect(answer.model).toBe("ura-qwen");
      expect(answer.calls.map((call) => call.tool)).toEqual(["mcp__ura__observe"]);
      // The call the client was delivered is the one the ledger registered.
      const registered = records(sidecar.episode.records.dir, "ledger").filter(
        (e) => e.type === "registered",
      );
      expect(registered.flatMap((e) => (e.calls as { id: string }[]).map((c) => c.id))).toEqual(
        answer.calls.map((call) => call.id),
      );
      // What went upstream is the hub request, built for Qwen.
      const upstream = sidecar.scripted.received[0]?.body as { messages: { role: string }[] };
      expect(upstream.messages.map((m) => m.role)).toEqual(["user"]);
      const lines = records(sidecar.episode.records.dir, "exchanges");
      expect(lines.map((line) => line.stage)).toEqual([
        "client_request",
        "after_context",
        "upstream_request",
        "upstream_response",
        "delivered",
        "status",
      ]);
      expect(lines[0]).toMatchObject({ protocol: "tiny", path: `/e/${sidecar.episode.id}/tiny/chat` });
      expect(lines.at(-2)?.body).toEqual(answer);
      expect(lines.at(-1)).toMatchObject({ status: "delivered" });
      expect(sidecar.episode.counters.delivered_exchanges).toBe(1);
    } finally {
      sidecar.stop();
    }
  });

  test("a misspelt field: Tiny's envelope names it, the failed exchange is recorded, nothing goes upstream", async () => {
    const sidecar = await tinySidecar();
    try {
      const res = await sidecar.post({ model: "ura-qwen", say: [{ who: "user", txt: "hi" }] });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { fault: { kind: string; field: string | null } };
      expect(body.fault.kind).toBe("invalid_request");
      expect(body.fault.field).toStartWith("say[0]");
      const lines = records(sidecar.episode.records.dir, "exchanges");
      expect(lines.map((line) => line.stage)).toEqual(["client_request", "status"]);
      expect(lines[1]).toMatchObject({ status: "failed", error: { kind: "invalid_request" } });
      expect(sidecar.scripted.received).toHaveLength(0);
    } finally {
      sidecar.stop();
    }
  });

  test("the protocol's model objects and a local refusal: answered by the route group, no exchange, no turn", async () => {
    const sidecar = await tinySidecar();
    try {
      const key = { authorization: `Bearer ${sidecar.episode.ingressKey}` };
      const base = `/e/${sidecar.episode.id}/tiny`;
      const list = await sidecar.app.request(`${base}/models`, { headers: key });
      expect(list.status).toBe(200);
      const { models } = (await list.json()) as { models: string[] };
      expect(models).toHaveLength(1);
      const other = await sidecar.app.request(`${base}/models/not-this-one`, { headers: key });
      expect(other.status).toBe(404);
      expect(((await other.json()) as { fault: { field: string } }).fault.field).toBe("model");
      const count = await postJson(sidecar.app, `${base}/count`, { model: "m" }, key);
      expect(count.status).toBe(400);
      expect(await count.json()).toMatchObject({
        fault: { kind: "invalid_request", message: "Tiny counts nothing here" },
      });
      const auxiliary = records(sidecar.episode.records.dir, "auxiliary");
      expect(auxiliary.map((line) => [line.protocol, line.operation])).toEqual([["tiny", "count"]]);
      expect(records(sidecar.episode.records.dir, "exchanges")).toEqual([]);
      expect(sidecar.scripted.received).toHaveLength(0);
    } finally {
      sidecar.stop();
    }
  });
});
