/**
 * Bad input: property-based fuzzing of each ingress in process
 * (`app.request()` over the real pipeline and the scripted upstream). Inputs are
 * recorded real client requests (fixtures/<protocol>/*) and a minimal first turn,
 * mutated: fields dropped or replaced, wrong types, unknown fields, huge strings,
 * deep nesting, truncated JSON, wrong content types; plus every bad image (invalid
 * base64, non-PNG bytes labelled PNG, truncated and lying PNGs) in each image
 * slot, and a few raw bodies. Every answer must come in time, never be a 5xx (the
 * scripted upstream answers normally, so no 5xx kind can be legitimate), and
 * every refusal must be the protocol's error envelope with a message naming the
 * problem. Failures are collected, then reported together.
 * Runs per ingress: URA_FUZZ_RUNS (default 120) plus the fixed image and raw cases.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import fc from "fast-check";
import {
  applyEdits,
  badImages,
  deepMarker,
  editArbitrary,
  type Json,
  replaceImages,
  serialise,
  stringValueIndexes,
  type Transport,
  transportArbitrary,
} from "../support/bad-input.ts";
import { createInProcessSidecar, type InProcessSidecar } from "../support/in-process-sidecar.ts";
import { ingressKits, type ProtocolName, protocols } from "../support/ingress-kit.ts";

const runs = Number(process.env.URA_FUZZ_RUNS ?? 120);
const requestTimeoutMs = 20_000;
/** An error message may quote the input, not carry it whole. */
const maxMessageChars = 2_000;
const fixturesDir = resolve(import.meta.dir, "../../fixtures");

type Seed = { name: string; body: Json; stream: boolean };

/** Recorded model-exchange requests of a protocol (fixtures/<protocol>/<case>/) and a minimal first turn. */
function seedsOf(protocol: ProtocolName): Seed[] {
  const dir = join(fixturesDir, protocol);
  const recorded = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => {
      try {
        const body = JSON.parse(readFileSync(join(dir, d.name, "client-request.json"), "utf8")) as Json;
        const meta = JSON.parse(readFileSync(join(dir, d.name, "meta.json"), "utf8")) as {
          path?: string;
          query?: { alt?: string };
        };
        // Only model exchanges: a countTokens body is not a generate request.
        if (protocol === "gemini" && !/enerateContent$/.test(meta.path ?? "")) return [];
        const stream =
          protocol === "gemini"
            ? meta.query?.alt === "sse"
            : (body as { stream?: unknown } | null)?.stream === true;
        return [{ name: `${protocol}/${d.name}`, body, stream }];
      } catch {
        return [];
      }
    });
  const kit = ingressKits[protocol];
  return [
    ...recorded,
    { name: `${protocol}/first-turn (synthetic)`, body: kit.firstTurn(true) as Json, stream: true },
  ];
}

type Outcome = { status: number; ms: number };
type Failure = { protocol: ProtocolName; input: string; problem: string };

let s: InProcessSidecar;
const failures: Failure[] = [];
const tried: Record<ProtocolName, { total: number; byStatus: Record<number, number> }> = {
  responses: { total: 0, byStatus: {} },
  gemini: { total: 0, byStatus: {} },
  messages: { total: 0, byStatus: {} },
};
/** The pinned known-bug inputs, counted apart. */
const deepNesting: { total: number; byStatus: Record<number, number> } = { total: 0, byStatus: {} };

beforeAll(async () => {
  s = await createInProcessSidecar();
});
afterAll(() => {
  for (const p of protocols) {
    console.log(
      `bad input: ${p}: ${tried[p].total} inputs tried, statuses ${JSON.stringify(tried[p].byStatus)}`,
    );
  }
  console.log(`bad input: inputs nested 50 000 deep: statuses ${JSON.stringify(deepNesting.byStatus)}`);
  const distinct = new Map<string, Failure>();
  for (const f of failures) distinct.set(`${f.protocol} ${f.problem.replace(/\d+/g, "N").slice(0, 160)}`, f);
  for (const [problem, f] of distinct) console.log(`bad input FAILURE: ${problem}\n  e.g. ${f.input}`);
  s.stop();
});

/** Sends one input to a fresh episode and checks the answer; returns the outcome or records a failure. */
async function tryInput(
  protocol: ProtocolName,
  input: string,
  body: string | Uint8Array,
  stream: boolean,
  contentType: string | null,
): Promise<Outcome | undefined> {
  const kit = ingressKits[protocol];
  const episode = s.createEpisode();
  const headers: Record<string, string> = { ...kit.headers(episode.ingressKey) };
  if (contentType !== null) headers["content-type"] = contentType;
  const started = performance.now();
  const counts = input.startsWith("nesting 50 000") ? deepNesting : tried[protocol];
  counts.total += 1;
  const fail = (problem: string) => {
    failures.push({ protocol, input, problem });
    return undefined;
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const res = await Promise.race([
      Promise.resolve(
        s.app.request(kit.path(episode.id, episode.model, stream), { method: "POST", headers, body }),
      ),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${requestTimeoutMs} ms`)),
          requestTimeoutMs,
        );
      }),
    ]);
    const text = await res.text();
    const ms = performance.now() - started;
    counts.byStatus[res.status] = (counts.byStatus[res.status] ?? 0) + 1;
    if (res.status >= 500) return fail(`HTTP ${res.status}: ${text.slice(0, 300)}`);
    if (res.status >= 400) {
      let envelope: { message: string; type: string };
      try {
        envelope = kit.readError(res.status, JSON.parse(text));
      } catch (error) {
        return fail(`HTTP ${res.status} without the ${protocol} error envelope: ${(error as Error).message}`);
      }
      const param = (JSON.parse(text) as { error?: { param?: unknown } }).error?.param;
      if (typeof param === "string" && !envelope.message.includes(param)) {
        return fail(`message does not name its param ${param}: ${envelope.message}`);
      }
      // The sidecar's messages are `field: problem` or speak of the body; none is empty, generic or a dump.
      if (
        envelope.message.length < 12 ||
        !/:|body/.test(envelope.message) ||
        /\[object Object\]|^internal error/.test(envelope.message)
      ) {
        return fail(`message does not name the problem: ${envelope.message.slice(0, 300)}`);
      }
      if (envelope.message.length > maxMessageChars) {
        return fail(
          `message of ${envelope.message.length} chars echoes the input: ${envelope.message.slice(0, 120)}…`,
        );
      }
    }
    return { status: res.status, ms };
  } catch (error) {
    return fail(`crash or hang: ${(error as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
}

/** The failures recorded since `from` (an index into `failures`), one readable line each. */
function failuresSince(from: number): string[] {
  return failures.slice(from).map((f) => `${f.input}\n    → ${f.problem}`);
}

describe.each([...protocols])("bad input: %s ingress", (protocol) => {
  const seeds = seedsOf(protocol);

  test("every seed is accepted as is (the fuzz starts from valid requests)", async () => {
    const from = failures.length;
    for (const seed of seeds) {
      const outcome = await tryInput(
        protocol,
        `${seed.name} unchanged`,
        JSON.stringify(seed.body),
        seed.stream,
        "application/json",
      );
      expect(outcome?.status).toBe(200);
    }
    expect(failuresSince(from)).toEqual([]);
  });

  test("mutated recorded requests: no 5xx, no crash or hang, always the error envelope naming the problem", async () => {
    const from = failures.length;
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: seeds.length - 1 }),
        fc.array(editArbitrary, { minLength: 1, maxLength: 3 }),
        transportArbitrary,
        async (seedIndex, edits, transport: Transport) => {
          const seed = seeds[seedIndex] as Seed;
          const { value, described } = applyEdits(seed.body, edits);
          const text = serialise(value);
          const body = transport.cut < 1 ? text.slice(0, Math.floor(text.length * transport.cut)) : text;
          const input = `${seed.name}: ${described.join("; ")}${transport.cut < 1 ? `; cut at ${body.length}/${text.length}` : ""}; content-type ${transport.contentType}`;
          await tryInput(protocol, input, body, seed.stream, transport.contentType);
        },
      ),
      { numRuns: runs },
    );
    expect(failuresSince(from)).toEqual([]);
  }, 300_000);

  test("bad images in every image slot are refused with a 400 naming the image", async () => {
    const from = failures.length;
    const withImages = seeds.filter(
      (seed) => replaceImages(structuredClone(seed.body), badImages[0] as (typeof badImages)[0]) > 0,
    );
    expect(withImages.length).toBeGreaterThan(0);
    for (const seed of withImages) {
      for (const image of badImages) {
        const body = structuredClone(seed.body);
        replaceImages(body, image);
        const outcome = await tryInput(
          protocol,
          `${seed.name}: ${image.name}`,
          JSON.stringify(body),
          seed.stream,
          "application/json",
        );
        // A PNG whose IHDR lies about its size still has valid pixel data for 1×1 only in theory; any refusal must be a 400.
        if (outcome && outcome.status !== 200) expect(outcome.status).toBe(400);
      }
    }
    expect(failuresSince(from)).toEqual([]);
  }, 120_000);

  // A body nested 50 000 levels deep used to reach JSON.stringify in the records and
  // overflow the stack (a 500 outside the envelope, no record): now refused before parsing.
  test("a body nested 50 000 levels deep is a 400 in the protocol envelope", async () => {
    const from = failures.length;
    const kit = ingressKits[protocol];
    const deep = serialise({
      ...(kit.firstTurn(true) as Record<string, Json>),
      metadata: `${deepMarker}{50000`,
    });
    const outcome = await tryInput(
      protocol,
      "nesting 50 000 deep at metadata",
      deep,
      true,
      "application/json",
    );
    // Kept out of the shared failure list: this test reports its own outcome.
    const found = failures.splice(from).map((f) => f.problem);
    expect(found).toEqual([]);
    expect(outcome?.status).toBe(400);
  });

  test("a long value in any identifier (id, name, type, role) is refused without being echoed whole", async () => {
    const from = failures.length;
    let sent = 0;
    for (const seed of seeds) {
      for (const at of stringValueIndexes(seed.body, /(^|_)(id|name|type|role)$/i)) {
        const { value, described } = applyEdits(seed.body, [{ op: "huge_string", at, bytes: 20_000 }]);
        await tryInput(
          protocol,
          `${seed.name}: ${described.join("")}`,
          serialise(value),
          seed.stream,
          "application/json",
        );
        sent += 1;
      }
    }
    expect(sent).toBeGreaterThan(8);
    expect(failuresSince(from)).toEqual([]);
  }, 120_000);

  test("raw bodies that are not a request object", async () => {
    const from = failures.length;
    const raw: [string, string | Uint8Array][] = [
      ["empty body", ""],
      ["null", "null"],
      ["array", "[]"],
      ["string", '"hello"'],
      ["number", "0"],
      ["open brace", "{"],
      ["empty object", "{}"],
      ["NUL byte", "\u0000"],
      ["invalid UTF-8", new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])],
      ["byte order mark", `\ufeff${JSON.stringify(seeds[0]?.body)}`],
      ["JSON with a trailing comma", JSON.stringify(seeds[0]?.body).replace(/}$/, ",}")],
    ];
    for (const [name, body] of raw) {
      const outcome = await tryInput(protocol, `raw: ${name}`, body, true, "application/json");
      if (outcome && name !== "byte order mark") expect(outcome.status).toBe(400);
    }
    expect(failuresSince(from)).toEqual([]);
  });
});
