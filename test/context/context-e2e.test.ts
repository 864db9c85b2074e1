/**
 * End to end: the sliding_window context policy through each ingress of
 * the compiled binary (dist/ura-sidecar; run `make build` first), against the
 * scripted upstream on a loopback port. Each protocol sends a long history built
 * from its recorded fixture's shapes — the recorded system prompt, tools and
 * first turns, then one observe call/result pair per generated PNG — to an
 * identity episode and to a sliding_window episode sized so the image phase must
 * act. What the upstream received and the episode's records show: the oldest
 * tool images became omission notices in whole batches, the newest 6–7 went on
 * as WebP, everything else is byte-identical to the identity episode's request,
 * no call or result is orphaned, and the decision (estimates measured on the PNGs,
 * before WebP conversion; what was evicted) is recorded apart from the client's
 * request. Protected content over the target is a final 400 in the protocol's
 * envelope, recorded as a failed exchange with the decision, with no upstream request.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { deflateSync } from "node:zlib";
import { type ContextDecision, contextDecisionSchema } from "../../src/context/decision-schema.ts";
import { estimateTokens } from "../../src/context/estimate.ts";
import { createOmissionNotice } from "../../src/context/omission-notice.ts";
import type { HubRequest, HubToolMessage } from "../../src/hub/schema.ts";
import { crc32 } from "../../src/images/write-png.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { type LaunchInfo, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

const fixturesDir = resolve(import.meta.dir, "../../fixtures");
const model = "qwen3-vl-plus";
const minRecentToolImages = 6;
const batchSize = 2;

type Json = Record<string, unknown>;
type ChatPart = { type: string; text?: string; image_url?: { url: string } };
type ChatMessage = {
  role: string;
  content: string | ChatPart[] | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
};
type ChatBody = Json & { messages: ChatMessage[]; tools?: unknown[] };
type ExchangeRecord = Json & { exchange: string; stage: string };

let upstream: Awaited<ReturnType<typeof serveScriptedUpstream>>;
let sidecar: SidecarProcess;

beforeAll(async () => {
  upstream = await serveScriptedUpstream();
  sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
});
afterAll(async () => {
  await sidecar.stopCleanly();
  upstream.stop();
});

function readFixture(path: string): Json {
  return JSON.parse(readFileSync(join(fixturesDir, path, "client-request.json"), "utf8")) as Json;
}

/**
 * Distinct 64×48 RGB frames as a fast encoder writes them: unfiltered rows in
 * stored (uncompressed) deflate blocks, ~9.3 kB each, while their lossless WebP is
 * a few hundred bytes. So an estimate taken after the WebP conversion would be
 * far from one taken on the PNGs the client sent.
 */
function generatePngs(count: number): string[] {
  return Array.from({ length: count }, (_, i) => Buffer.from(storedPng(64, 48, i)).toString("base64"));
}

function storedPng(width: number, height: number, seed: number): Uint8Array {
  const raw = new Uint8Array((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    raw[row] = 0; // filter: none
    for (let x = 0; x < width; x++)
      raw.set([(x * 4 + seed * 17) & 0xff, (y * 5) & 0xff, (seed * 40) & 0xff], row + 1 + x * 3);
  }
  const header = new Uint8Array(13);
  new DataView(header.buffer).setUint32(0, width);
  new DataView(header.buffer).setUint32(4, height);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const chunk = (type: string, data: Uint8Array) => {
    const out = new Uint8Array(12 + data.length);
    new DataView(out.buffer).setUint32(0, data.length);
    out.set(new TextEncoder().encode(type), 4);
    out.set(data, 8);
    new DataView(out.buffer).setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
    return out;
  };
  return Buffer.concat([
    new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk("IHDR", header),
    chunk("IDAT", new Uint8Array(deflateSync(raw, { level: 0 }))),
    chunk("IEND", new Uint8Array(0)),
  ]);
}

const nonce = (i: number) => `n${String(i).padStart(4, "0")}`;

/** One protocol: how its recorded request is grown into a long image history, and where it is posted. */
type Ingress = {
  name: string;
  imageCount: number;
  callId: (i: number) => string;
  build: (images: string[]) => Json;
  url: (launch: LaunchInfo) => string;
  headers: (launch: LaunchInfo) => Record<string, string>;
  /** The protocol's error envelope for a request_too_large failure. */
  expectTooLarge: (body: Json) => void;
};

/**
 * Codex CLI's recorded turn (fixtures/responses/codex-tool-image): its developer and
 * user messages and tools, then the recorded function_call/function_call_output pair
 * repeated with new call ids, nonces and images.
 */
const responsesIngress: Ingress = {
  name: "Responses",
  imageCount: 12,
  callId: (i) => `call_resp_${i}`,
  build(images) {
    const base = readFixture("responses/codex-tool-image");
    const input = base.input as Json[];
    const call = input.find((item) => item.type === "function_call") as Json;
    const output = input.find((item) => item.type === "function_call_output") as Json;
    const lead = input.filter((item) => item.type === "message");
    const pairs = images.flatMap((image, i) => [
      { ...call, id: `fc_${i}`, call_id: this.callId(i) },
      {
        ...output,
        id: `fco_${i}`,
        call_id: this.callId(i),
        output: [
          { type: "input_text", text: `observation nonce=${nonce(i)}: frame ${i} of the front camera.` },
          { type: "input_image", image_url: `data:image/png;base64,${image}`, detail: "high" },
        ],
      },
    ]);
    return { ...base, input: [...lead, ...pairs] };
  },
  url: (launch) => `${launch.urls.responses}/responses`,
  headers: (launch) => ({ authorization: `Bearer ${launch.ingress_key}` }),
  expectTooLarge(body) {
    expect(body).toMatchObject({
      error: { type: "invalid_request_error", code: "request_too_large", param: null },
    });
    expect((body.error as Json).message).toMatch(/^context policy sliding_window: /);
  },
};

/**
 * Gemini CLI's recorded turn (fixtures/gemini/function-response-image): system
 * instruction, tools, generation config and first user content, then the recorded
 * functionCall / functionResponse+inlineData pair repeated. 13 images: 7 are kept.
 */
const geminiIngress: Ingress = {
  name: "Gemini",
  imageCount: 13,
  callId: (i) => `call_gem_${i}`,
  build(images) {
    const base = readFixture("gemini/function-response-image");
    const [first, modelTurn, resultTurn] = base.contents as [Json, Json, Json];
    const callPart = (modelTurn.parts as Json[])[0] as Json;
    const responsePart = (resultTurn.parts as Json[])[0] as Json;
    const functionCall = callPart.functionCall as Json;
    const functionResponse = responsePart.functionResponse as Json;
    const pairs = images.flatMap((image, i) => [
      { ...modelTurn, parts: [{ ...callPart, functionCall: { ...functionCall, id: this.callId(i) } }] },
      {
        ...resultTurn,
        parts: [
          {
            functionResponse: {
              ...functionResponse,
              id: this.callId(i),
              response: {
                output: `observation nonce=${nonce(i)}: frame ${i} of the front camera.\n[Tool 'observe' provided the following image data with mime-type: image/png]`,
              },
            },
          },
          { inlineData: { data: image, mimeType: "image/png" } },
        ],
      },
    ]);
    return { ...base, contents: [first, ...pairs] };
  },
  url: (launch) => `${launch.urls.gemini}/v1beta/models/${model}:generateContent`,
  headers: (launch) => ({ "x-goog-api-key": launch.ingress_key }),
  expectTooLarge(body) {
    expect(body).toMatchObject({ error: { code: 400, status: "INVALID_ARGUMENT" } });
    expect((body.error as Json).message).toMatch(/^context policy sliding_window: /);
  },
};

/**
 * Claude Code's recorded turn (fixtures/messages/tool-result-image): system blocks,
 * tools, first user message and mid-conversation system message, then the recorded
 * tool_use / tool_result pair repeated.
 */
const messagesIngress: Ingress = {
  name: "Messages",
  imageCount: 12,
  callId: (i) => `toolu_${String(i).padStart(4, "0")}`,
  build(images) {
    const base = readFixture("messages/tool-result-image");
    const messages = base.messages as Json[];
    const useTurn = messages.find((m) => m.role === "assistant") as Json;
    const resultTurn = messages[messages.length - 1] as Json;
    const toolUse = (useTurn.content as Json[])[0] as Json;
    const toolResult = (resultTurn.content as Json[])[0] as Json;
    const lead = messages.slice(0, messages.indexOf(useTurn));
    const pairs = images.flatMap((image, i) => [
      { ...useTurn, content: [{ ...toolUse, id: this.callId(i) }] },
      {
        ...resultTurn,
        content: [
          {
            ...toolResult,
            tool_use_id: this.callId(i),
            content: [
              { type: "text", text: `observation nonce=${nonce(i)}: frame ${i} of the front camera.` },
              { type: "image", source: { type: "base64", media_type: "image/png", data: image } },
            ],
          },
        ],
      },
    ]);
    return { ...base, stream: false, messages: [...lead, ...pairs] };
  },
  url: (launch) => `${launch.urls.anthropic}/v1/messages`,
  headers: (launch) => ({ "x-api-key": launch.ingress_key, "anthropic-version": "2023-06-01" }),
  expectTooLarge(body) {
    expect(body).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect((body.error as Json).message).toMatch(/^context policy sliding_window: /);
  },
};

type Sent = { status: number; body: string; upstream: ChatBody | undefined; records: ExchangeRecord[] };

/** Posts one request and returns the answer, what the scripted upstream received for it, and the exchange's records. */
async function send(ingress: Ingress, launch: LaunchInfo, body: Json): Promise<Sent> {
  const before = upstream.scripted.received.length;
  const res = await fetch(ingress.url(launch), {
    method: "POST",
    headers: { "content-type": "application/json", ...ingress.headers(launch) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const received = upstream.scripted.received.slice(before);
  expect(received.length).toBeLessThanOrEqual(1);
  const records = await exchangeRecords(launch.records_dir);
  return { status: res.status, body: text, upstream: received[0]?.body as ChatBody | undefined, records };
}

/** The episode's exchanges.jsonl (images resolved) once its (single) exchange has its final status. */
async function exchangeRecords(recordsDir: string): Promise<ExchangeRecord[]> {
  const deadline = Date.now() + 5_000;
  const records = openRecords(dirname(dirname(recordsDir)));
  for (;;) {
    let lines: ExchangeRecord[] = [];
    try {
      lines = readFileSync(join(recordsDir, "exchanges.jsonl"), "utf8")
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => records.resolve(JSON.parse(line)) as ExchangeRecord);
    } catch {
      // not written yet
    }
    if (lines.some((line) => line.stage === "status") || Date.now() > deadline) return lines;
    await Bun.sleep(20);
  }
}

function stage(records: ExchangeRecord[], name: string): ExchangeRecord | undefined {
  return records.find((record) => record.stage === name);
}

function textOf(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part.text ?? "").join("\n");
}

/** A user message the upstream builder made to carry tool-result images. */
function carriesImages(message: ChatMessage): boolean {
  return (
    message.role === "user" &&
    Array.isArray(message.content) &&
    message.content.some((p) => p.type === "image_url")
  );
}

/** Every call has exactly one result and every result its call. */
function expectNoOrphans(messages: ChatMessage[]): void {
  const calls = messages.flatMap((m) => m.tool_calls?.map((call) => call.id) ?? []);
  const results = messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id);
  expect(new Set(calls).size).toBe(calls.length);
  expect(results.sort()).toEqual([...calls].sort());
}

function toolMessages(request: HubRequest): HubToolMessage[] {
  return request.messages.filter((m): m is HubToolMessage => m.role === "tool");
}

/** Episodes made so far, to check their status afterwards. */
const slidingEpisodes: { ingress: string; launch: LaunchInfo; policy: Json }[] = [];

describe.each([responsesIngress, geminiIngress, messagesIngress])(
  "sliding_window through the $name ingress",
  (ingress) => {
    const images = generatePngs(ingress.imageCount);
    const body = ingress.build(images);
    let identity: Sent;
    let identityDecision: ContextDecision;

    beforeAll(async () => {
      const launch = await sidecar.createEpisode({ model, context: { policy: "identity" } });
      identity = await send(ingress, launch, body);
      expect(identity.status).toBe(200);
      identityDecision = contextDecisionSchema.parse(stage(identity.records, "after_context")?.decision);
    });

    test("the identity episode sends every image on, as WebP, and records a no-op decision", () => {
      const upstreamBody = identity.upstream as ChatBody;
      const urls = upstreamBody.messages.flatMap((m) =>
        Array.isArray(m.content) ? m.content.flatMap((p) => (p.image_url ? [p.image_url.url] : [])) : [],
      );
      expect(urls).toHaveLength(ingress.imageCount);
      for (const url of urls) expect(url.startsWith("data:image/webp;base64,")).toBe(true);
      expect(identityDecision).toMatchObject({
        policy: "identity",
        reduced: false,
        images_omitted: [],
        blocks_removed: [],
      });
      expect(identityDecision.estimate_after).toBe(identityDecision.estimate_before);
      expect(stage(identity.records, "after_context")?.request).toBe("identical to the translated request");
    });

    test("the oldest images become omission notices in whole batches; the newest 6–7 go on as WebP; the rest is unchanged", async () => {
      const estimate = identityDecision.estimate_before;
      // Tokens one image adds to the estimate: its base64 / 4 (the smallest of them).
      const perImage = Math.floor(Math.min(...images.map((image) => image.length)) / 4);
      // Over max, and a target 5 evictions would reach (4 would not): whole batches of 2
      // make it 6, all the eligible ones, so 6 (of 12) or 7 (of 13) images stay.
      const policy = {
        policy: "sliding_window",
        max_input_tokens: estimate - 1,
        target_input_tokens: estimate - Math.floor(4.5 * perImage),
        min_recent_tool_images: minRecentToolImages,
        image_eviction_batch_size: batchSize,
        keep_recent_blocks: 2,
      };
      const launch = await sidecar.createEpisode({ model, context: policy });
      slidingEpisodes.push({ ingress: ingress.name, launch, policy });
      const sliding = await send(ingress, launch, body);
      expect(sliding.status).toBe(200);

      const evictable = Math.floor((ingress.imageCount - minRecentToolImages) / batchSize) * batchSize;
      const kept = ingress.imageCount - evictable;
      expect(evictable).toBe(6);
      expect(kept).toBe(ingress.imageCount === 13 ? 7 : 6);
      const ids = images.map((_, i) => ingress.callId(i));
      const omittedIds = ids.slice(0, evictable);

      // --- what the upstream received, against the identity episode's request
      const got = sliding.upstream as ChatBody;
      const want = identity.upstream as ChatBody;
      const { messages: gotMessages, ...gotRest } = got;
      const { messages: wantMessages, ...wantRest } = want;
      expect(JSON.stringify(got.tools)).toBe(JSON.stringify(want.tools));
      expect(gotRest).toEqual(wantRest);
      const systems = (messages: ChatMessage[]) =>
        JSON.stringify(messages.filter((m) => m.role === "system"));
      expect(systems(gotMessages)).toBe(systems(wantMessages));
      expect(gotMessages.filter((m) => m.role === "system").length).toBeGreaterThan(0);
      // Everything but tool results and their image carriers is byte-identical (system, user, assistant calls).
      const frame = (messages: ChatMessage[]) =>
        JSON.stringify(messages.filter((m) => m.role !== "tool" && !carriesImages(m)));
      expect(frame(gotMessages)).toBe(frame(wantMessages));
      expectNoOrphans(gotMessages);

      const gotTools = gotMessages.filter((m) => m.role === "tool");
      const wantTools = wantMessages.filter((m) => m.role === "tool");
      expect(gotTools.map((m) => m.tool_call_id)).toEqual(ids);
      gotTools.forEach((message, i) => {
        const notice = createOmissionNotice(ids[i] as string, 1).text;
        if (i < evictable) {
          expect(textOf(message.content)).toContain(notice);
          expect(textOf(message.content)).toContain(`nonce=${nonce(i)}`);
          expect(textOf(message.content)).not.toContain("follow in the next user message");
        } else {
          expect(message).toEqual(wantTools[i] as ChatMessage);
        }
      });
      const gotCarriers = gotMessages.filter(carriesImages);
      const wantCarriers = wantMessages.filter(carriesImages);
      expect(gotCarriers).toHaveLength(kept);
      expect(gotCarriers).toEqual(wantCarriers.slice(evictable));
      for (const carrier of gotCarriers) {
        const urls = (carrier.content as ChatPart[]).flatMap((p) => (p.image_url ? [p.image_url.url] : []));
        expect(urls).toHaveLength(1);
        expect(urls[0]?.startsWith("data:image/webp;base64,")).toBe(true);
      }
      for (const id of omittedIds) expect(JSON.stringify(gotCarriers)).not.toContain(`tool call ${id} `);

      // --- the records: the client's request, the translated and after-context requests and the decision, apart
      expect(stage(sliding.records, "client_request")?.body).toEqual(body);
      const afterContext = stage(sliding.records, "after_context") as ExchangeRecord;
      const decision = contextDecisionSchema.parse(afterContext.decision);
      const translated = afterContext.translated as HubRequest;
      const filtered = afterContext.request as HubRequest;
      const imageIndex = (message: HubToolMessage) =>
        message.content.findIndex((part) => part.type === "image");
      const translatedTools = toolMessages(translated);
      expect(decision).toEqual({
        policy: "sliding_window",
        estimate_before: estimate,
        estimate_after: decision.estimate_after,
        reduced: true,
        images_omitted: omittedIds.map((id, i) => ({
          toolCallId: id,
          index: imageIndex(translatedTools[i] as HubToolMessage),
        })),
        blocks_removed: [],
        // The model's window guard is recorded on every decision; this history is far under it.
        window: expect.objectContaining({ engaged: false }),
      });
      expect(decision.estimate_before).toBeGreaterThan(policy.max_input_tokens);
      expect(decision.estimate_after).toBeLessThanOrEqual(policy.target_input_tokens);
      expect(estimateTokens(translated)).toBe(decision.estimate_before);
      expect(estimateTokens(filtered)).toBe(decision.estimate_after);
      toolMessages(filtered).forEach((message, i) => {
        const original = translatedTools[i] as HubToolMessage;
        const at = imageIndex(original);
        if (i < evictable) {
          expect(message.content[at]).toEqual(createOmissionNotice(ids[i] as string, 1));
          expect(message.content.filter((_, j) => j !== at)).toEqual(
            original.content.filter((_, j) => j !== at),
          );
        } else {
          expect(message).toEqual(original);
        }
      });

      // --- context runs before images: the estimate measured the client's PNGs, and only kept images were converted
      translatedTools.forEach((message, i) => {
        // `source` (the client's field path, named by errors) rides along.
        expect(message.content[imageIndex(message)]).toEqual({
          type: "image",
          mediaType: "image/png",
          data: images[i] as string,
          source: expect.any(String),
        });
      });
      const webp = gotCarriers.map((carrier) => {
        const url = (carrier.content as ChatPart[]).find((p) => p.image_url)?.image_url?.url as string;
        return url.slice("data:image/webp;base64,".length);
      });
      const asIfWebp: HubRequest = {
        ...filtered,
        messages: filtered.messages.map((message) => {
          if (message.role !== "tool") return message;
          const k = ids.indexOf(message.toolCallId) - evictable;
          if (k < 0) return message;
          return {
            ...message,
            content: message.content.map((part) =>
              part.type === "image"
                ? { type: "image" as const, mediaType: "image/webp", data: webp[k] as string }
                : part,
            ),
          };
        }),
      };
      // Measured after the conversion, the kept images would count for almost nothing.
      expect(decision.estimate_after - estimateTokens(asIfWebp)).toBeGreaterThan(0.9 * kept * perImage);
      const upstreamRecord = stage(sliding.records, "upstream_request") as ExchangeRecord;
      // Every kept image converted, or found in the process-wide cache (the identity episode sent the same frames).
      const imageStats = upstreamRecord.images as { images: number; converted: number; cacheHits: number };
      expect(imageStats.images).toBe(kept);
      expect(imageStats.converted + imageStats.cacheHits).toBe(kept);
      const order = sliding.records.map((record) => record.stage);
      expect(order.indexOf("after_context")).toBeLessThan(order.indexOf("upstream_request"));
      console.log(
        `${ingress.name}: estimate ${decision.estimate_before} → ${decision.estimate_after} tokens ` +
          `(target ${policy.target_input_tokens}); ${evictable} PNGs omitted, ${kept} kept; ` +
          `kept images ${kept * perImage} tokens as PNG vs ${Math.floor(webp.reduce((s, w) => s + w.length, 0) / 4)} as WebP`,
      );
    });

    test("protected content alone over the target: a final 400 in the protocol's envelope, recorded with the decision", async () => {
      const target = 2_000;
      const launch = await sidecar.createEpisode({
        model,
        context: {
          policy: "sliding_window",
          max_input_tokens: target,
          target_input_tokens: target,
          min_recent_tool_images: minRecentToolImages,
          image_eviction_batch_size: batchSize,
          keep_recent_blocks: 2,
        },
      });
      const failed = await send(ingress, launch, body);
      expect(failed.status).toBe(400);
      ingress.expectTooLarge(JSON.parse(failed.body) as Json);
      expect(failed.upstream).toBeUndefined();
      expect(failed.records.map((record) => record.stage)).toEqual(["client_request", "status"]);

      const status = stage(failed.records, "status") as ExchangeRecord;
      expect(status).toMatchObject({
        status: "failed",
        error: { kind: "request_too_large", http_status: 400 },
        episode_state: "running",
      });
      const decision = contextDecisionSchema.parse(status.context_decision);
      const ids = images.map((_, i) => ingress.callId(i));
      expect(decision).toMatchObject({
        policy: "sliding_window",
        reduced: false,
        estimate_before: identityDecision.estimate_before,
      });
      expect(decision.images_omitted.map((image) => image.toolCallId)).toEqual(ids.slice(0, 6));
      // Every block but the newest two was removed, and it is still over: the rest is protected.
      expect(decision.blocks_removed).toEqual(ids.slice(0, -2).map((id) => ({ toolCallIds: [id] })));
      expect(decision.estimate_after).toBeGreaterThan(target);
      expect((status.error as Json).message).toContain(`~${decision.estimate_after} tokens`);

      // A context failure is the request's fault, not the provider's: the episode keeps running.
      const described = await sidecar.episode(launch.id);
      expect(described.state).toBe("running");
      expect(described.counters.failed_exchanges).toBe(1);
    });
  },
);

describe("episode status reports the context policy in use", () => {
  test("each sliding_window episode above reports the policy it was created with", async () => {
    expect(slidingEpisodes).toHaveLength(3);
    for (const { launch, policy } of slidingEpisodes) {
      const res = await sidecar.control(`/episodes/${launch.id}`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as Json).context_policy).toEqual(policy);
    }
  });

  test("omitted settings are reported with their defaults; no policy is identity", async () => {
    const partial = await sidecar.createEpisode({
      context: { policy: "sliding_window", max_input_tokens: 50_000, target_input_tokens: 40_000 },
    });
    expect(
      ((await (await sidecar.control(`/episodes/${partial.id}`)).json()) as Json).context_policy,
    ).toEqual({
      policy: "sliding_window",
      max_input_tokens: 50_000,
      target_input_tokens: 40_000,
      min_recent_tool_images: 6,
      image_eviction_batch_size: 2,
      keep_recent_blocks: 2,
    });
    const plain = await sidecar.createEpisode({});
    expect(((await (await sidecar.control(`/episodes/${plain.id}`)).json()) as Json).context_policy).toEqual({
      policy: "identity",
    });
  });

  test("a policy with target above max or a misspelt key is refused, naming the field", async () => {
    const inverted = await sidecar.control("/episodes", {
      method: "POST",
      body: JSON.stringify({
        context: { policy: "sliding_window", max_input_tokens: 1_000, target_input_tokens: 2_000 },
      }),
    });
    expect(inverted.status).toBe(400);
    expect(await inverted.text()).toContain("target_input_tokens");
    const misspelt = await sidecar.control("/episodes", {
      method: "POST",
      body: JSON.stringify({ context: { policy: "sliding_window", min_recent_images: 4 } }),
    });
    expect(misspelt.status).toBe(400);
    expect(await misspelt.text()).toContain("min_recent_images");
  });

  test("an episode that chooses no policy gets the config's context default", async () => {
    const policy = {
      policy: "sliding_window",
      max_input_tokens: 9_000,
      target_input_tokens: 8_000,
      min_recent_tool_images: 6,
      image_eviction_batch_size: 2,
      keep_recent_blocks: 2,
    };
    const configured = await startSidecarProcess({ upstreamUrl: upstream.url, config: { context: policy } });
    try {
      const launch = await configured.createEpisode({});
      const described = (await (await configured.control(`/episodes/${launch.id}`)).json()) as Json;
      expect(described.context_policy).toEqual(policy);
    } finally {
      await configured.stop();
    }
  }, 20_000);
});
