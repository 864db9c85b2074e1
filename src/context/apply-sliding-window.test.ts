/**
 * sliding_window measures with the request's hold (known-texts.ts): a frame the hold
 * knows is not scanned for its base64 alphabet again, and the decision is the one
 * measured without any hold.
 */
import { describe, expect, test } from "bun:test";
import { observeHistory } from "../../test/support/observe-history.ts";
import type { HubImagePart } from "../hub/schema.ts";
import type { TextHold } from "../lib/known-texts.ts";
import { applyContextPolicy } from "./apply-context.ts";
import { contextPolicySchema } from "./policy-schema.ts";

/** A hold that computes every fact and notes which texts it was asked about, by kind. */
function askedHold(): TextHold & { asked: Map<string, Set<string>> } {
  const asked = new Map<string, Set<string>>();
  return {
    asked,
    factsOf: (digest) => ({ digest, values: new Map() }),
    add: () => {},
    fact(text, kind, compute) {
      const texts = asked.get(kind) ?? new Set<string>();
      texts.add(text);
      asked.set(kind, texts);
      return compute();
    },
    retain: () => {},
    release: () => {},
  };
}

const frame = (turn: number) => `iVBORw0KGgo${String.fromCharCode(65 + (turn % 26)).repeat(4_000)}${turn}`;

describe("sliding_window with the request's hold", () => {
  test("each frame's base64 check goes through the hold, and the decision equals the one without it", () => {
    const request = observeHistory(
      [{ role: "user", content: [{ type: "text", text: "Watch the table." }] }],
      30,
      (turn) => [
        { type: "text", text: `frame ${turn}` },
        { type: "image", mediaType: "image/png", data: frame(turn) },
      ],
      { model: "qwen" },
    );
    const policy = contextPolicySchema.parse({
      policy: "sliding_window",
      max_input_tokens: 20_000,
      target_input_tokens: 15_000,
    });
    const hold = askedHold();
    const held = applyContextPolicy(request, policy, undefined, undefined, undefined, hold);
    const alone = applyContextPolicy(request, policy);
    expect(held.decision.reduced).toBe(true);
    expect(held.decision).toEqual(alone.decision);
    expect(held.request).toEqual(alone.request);
    expect(held.stale).toEqual(alone.stale);
    const frames = request.messages.flatMap((m) =>
      m.role === "tool"
        ? m.content.filter((p): p is HubImagePart => p.type === "image").map((p) => p.data as string)
        : [],
    );
    expect([...(hold.asked.get("plain_base64") ?? [])].sort()).toEqual(frames.sort());
  });
});
