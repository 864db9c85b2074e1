/**
 * A property every ingress's translation of a growing history must hold: translated with
 * the episode's memos (its resent items reused, frozen; a plain text item translated once),
 * each turn gives, whatever the client did to its history between turns (appended, edited,
 * dropped, compacted), exactly what a fresh request gives: the same hub request or the same
 * error, the same measured size, the same upstream text with its known spans where they say,
 * and the same `client_request` and `upstream_request` record lines (the records' reuse of
 * the known spans and of the last upstream body's segments against a writer that knows none).
 */
import { expect } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { createRepeatedMembers, type JsonBody, parseJsonBody } from "../../src/body/parse-json-body.ts";
import { measureMessageBytes, measureRequestBytes } from "../../src/context/estimate.ts";
import type { HubRequest } from "../../src/hub/schema.ts";
import { SidecarError } from "../../src/lib/errors.ts";
import { type JsonText, stringifyKnowingMembers } from "../../src/lib/frozen-json.ts";
import { createBlobStore } from "../../src/records/blob-store.ts";
import { formatRecordLine } from "../../src/records/episode-records.ts";
import { createGrowingText, knownSpansOfGrowingText } from "../../src/records/growing-text-spans.ts";
import { createRecurringTexts } from "../../src/records/text-references.ts";
import { buildChatRequest } from "../../src/upstream/build-chat-request.ts";
import { temporaryDirectory } from "./exit-cleanup.ts";
import { chatTarget } from "./hub-kit.ts";

/** One turn's change to a history of items of type T. */
export type HistoryChange<T> =
  | { kind: "append"; items: T[] }
  | { kind: "edit"; at: number; to: T[] }
  | { kind: "drop"; at: number }
  | { kind: "compact"; keep: number };

export function historyChanges<T>(newItems: fc.Arbitrary<T[]>): fc.Arbitrary<HistoryChange<T>> {
  return fc.oneof(
    { arbitrary: fc.record({ kind: fc.constant("append" as const), items: newItems }), weight: 5 },
    { arbitrary: fc.record({ kind: fc.constant("edit" as const), at: fc.nat(), to: newItems }), weight: 2 },
    { arbitrary: fc.record({ kind: fc.constant("drop" as const), at: fc.nat() }), weight: 2 },
    { arbitrary: fc.record({ kind: fc.constant("compact" as const), keep: fc.nat() }), weight: 1 },
  );
}

function apply<T>(history: T[], c: HistoryChange<T>): T[] {
  const items = [...history];
  if (c.kind === "append") return [...items, ...c.items];
  if (items.length === 0) return items;
  if (c.kind === "compact") return items.slice(items.length - (c.keep % (items.length + 1)));
  const at = c.at % items.length;
  if (c.kind === "edit") items.splice(at, 1, ...c.to);
  else items.splice(at, 1);
  return items;
}

function outcome(run: () => HubRequest): HubRequest | { param: string | undefined; message: string } {
  try {
    return run();
  } catch (error) {
    if (!(error instanceof SidecarError)) throw error;
    return { param: error.param, message: error.message };
  }
}

/** The records' lines of one episode, written as the records write them (their own blob store and remembered texts). */
function recordLines(root: string) {
  // Nothing here needs to survive a power cut: no fsync.
  const blobs = createBlobStore(mkdtempSync(join(root, "run-")), { fsync: false });
  // Short "long" strings: most items then hold one, so references and their reuse are exercised.
  const texts = createRecurringTexts(blobs, { redact: (text) => text, minTokenBytes: 24 });
  const options = { clock: () => 0, redact: (text: string) => text, blobs, texts };
  // Small segments: a short history is cut into several, as a long one is.
  const lastUpstream = createGrowingText(64);
  return {
    /** The client's body with the parse's known spans (none for a fresh parse). */
    clientRequest: (body: JsonBody) =>
      formatRecordLine(
        options,
        { stage: "client_request" },
        { json: { body: { split: body.received, known: (body.parsed && body.known) || [] } } },
      ),
    /** The upstream text; with known spans, cut against the last one's segments as the records do. */
    upstreamRequest: (json: JsonText | string) =>
      formatRecordLine(
        options,
        { stage: "upstream_request" },
        {
          json: {
            body:
              typeof json === "string"
                ? json
                : knownSpansOfGrowingText(lastUpstream, json, !json.text.includes(";base64,")),
          },
        },
      ),
  };
}

export type GrowingHistory<T> = {
  /** The members the protocol's client resends, and its history member (protocol-routes). */
  repeated: { members: readonly string[]; history: string };
  first: T[];
  newItems: fc.Arbitrary<T[]>;
  /** The request body holding this history. */
  body: (history: T[]) => unknown;
  /** `turn`: the turn's number from 0, for what the episode learns between turns (a delivered call's arguments). */
  translate: (body: JsonBody, turn: number) => HubRequest;
};

export function expectGrowingHistoryAsFresh<T>(spec: GrowingHistory<T>, numRuns = 300): void {
  const root = temporaryDirectory("ura-growing-history-");
  try {
    fc.assert(
      fc.property(fc.array(historyChanges(spec.newItems), { minLength: 1, maxLength: 10 }), (changes) => {
        const repeated = createRepeatedMembers(spec.repeated.members, spec.repeated.history);
        const reusedLines = recordLines(root);
        const freshLines = recordLines(root);
        let history = spec.first;
        for (const [turn, c] of changes.entries()) {
          history = apply(history, c);
          const sent = JSON.stringify(spec.body(history));
          const reusedBody = parseJsonBody(sent, repeated);
          const freshBody = parseJsonBody(sent);
          expect(reusedLines.clientRequest(reusedBody)).toBe(freshLines.clientRequest(freshBody));
          const reused = outcome(() => spec.translate(reusedBody, turn));
          const fresh = outcome(() => spec.translate(freshBody, turn));
          expect(reused).toEqual(fresh);
          expect(JSON.stringify(reused)).toBe(JSON.stringify(fresh));
          if (!("messages" in reused) || !("messages" in fresh)) continue;
          expect(measureRequestBytes(reused, repeated.memos)).toBe(measureRequestBytes(fresh));
          reused.messages.forEach((message, i) => {
            expect(measureMessageBytes(message, repeated.memos)).toBe(
              measureMessageBytes(fresh.messages[i] as typeof message),
            );
          });
          const chat = buildChatRequest(reused, chatTarget, repeated.memos);
          const { text: upstream, known } = stringifyKnowingMembers(chat, repeated.memos);
          const freshUpstream = JSON.stringify(buildChatRequest(fresh, chatTarget));
          expect(upstream).toBe(freshUpstream);
          for (const span of known)
            expect(upstream.slice(span.start, span.end)).toBe(JSON.stringify(span.key));
          expect(reusedLines.upstreamRequest({ text: upstream, known })).toBe(
            freshLines.upstreamRequest(freshUpstream),
          );
        }
      }),
      { numRuns },
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
