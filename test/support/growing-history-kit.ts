/**
 * A property every ingress's translation of a growing history must hold: translated with
 * the episode's memos (its resent items reused, frozen; a plain text item translated once),
 * each turn gives, whatever the client did to its history between turns (appended, edited,
 * dropped, compacted), exactly what a fresh request gives: the same hub request or the same
 * error, the same measured size, the same upstream text with its known spans where they say.
 */
import { expect } from "bun:test";
import fc from "fast-check";
import { createRepeatedMembers, type JsonBody, parseJsonBody } from "../../src/body/parse-json-body.ts";
import { measureMessageBytes, measureRequestBytes } from "../../src/context/estimate.ts";
import type { HubRequest } from "../../src/hub/schema.ts";
import { SidecarError } from "../../src/lib/errors.ts";
import { stringifyKnowingMembers } from "../../src/lib/frozen-json.ts";
import { buildChatRequest } from "../../src/upstream/build-chat-request.ts";
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
  fc.assert(
    fc.property(fc.array(historyChanges(spec.newItems), { minLength: 1, maxLength: 10 }), (changes) => {
      const repeated = createRepeatedMembers(spec.repeated.members, spec.repeated.history);
      let history = spec.first;
      for (const [turn, c] of changes.entries()) {
        history = apply(history, c);
        const sent = JSON.stringify(spec.body(history));
        const reused = outcome(() => spec.translate(parseJsonBody(sent, repeated), turn));
        const fresh = outcome(() => spec.translate(parseJsonBody(sent), turn));
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
        expect(upstream).toBe(JSON.stringify(buildChatRequest(fresh, chatTarget)));
        for (const span of known) expect(upstream.slice(span.start, span.end)).toBe(JSON.stringify(span.key));
      }
    }),
    { numRuns },
  );
}
