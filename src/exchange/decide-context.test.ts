import { expect, test } from "bun:test";
import { observeHistory } from "../../test/support/observe-history.ts";
import { createContextMemory } from "../context/context-cut.ts";
import { contextPolicySchema } from "../context/policy-schema.ts";
import type { HubRequest } from "../hub/schema.ts";
import { createImageConverter } from "../images/convert-request.ts";
import { createImageCache } from "../images/image-cache.ts";
import { webpSettingsSchema } from "../images/settings.ts";
import { stringifyKnowingMembers } from "../lib/frozen-json.ts";
import { buildUpstreamBody } from "./build-upstream-body.ts";
import { afterContextFields, decideContext } from "./decide-context.ts";

const target = { model: "qwen3-vl-plus", imageInput: true, parallelToolCalls: true };
// Text only: nothing is ever converted.
const images = createImageConverter({
  converter: {
    convert: () => {
      throw new Error("no image to convert");
    },
  },
  settings: webpSettingsSchema.parse({}),
  cache: createImageCache(1024),
});
const options = { target, providerLimitBytes: 1024 * 1024, images };

/** A history of `turns` call/result blocks, each result 2 KB of text. */
function history(turns: number): HubRequest {
  return observeHistory(
    [{ role: "user", content: [{ type: "text", text: "Watch the table." }] }],
    turns,
    (i) => [{ type: "text", text: `${i}`.repeat(2048) }],
    { model: "q" },
  );
}

test("identity decides once and records the request as identical", async () => {
  const translated = history(3);
  const outcome = await decideContext(translated, contextPolicySchema.parse({ policy: "identity" }), options);
  expect(outcome.request).toBe(translated);
  expect(afterContextFields(outcome)).toEqual({
    request: "identical to the translated request",
    decision: outcome.decision,
  });
});

test("sliding_window's changed request is recorded with the translated one", async () => {
  const translated = history(10);
  const policy = contextPolicySchema.parse({
    policy: "sliding_window",
    max_input_tokens: 2000,
    target_input_tokens: 1500,
  });
  const outcome = await decideContext(translated, policy, options);
  expect(outcome.decision.reduced).toBe(true);
  expect(afterContextFields(outcome)).toEqual({
    request: outcome.request,
    translated,
    decision: outcome.decision,
  });
});

test("body_budget's whole decision is the one recorded: what it removed and the body's exact bytes", async () => {
  const translated = history(10);
  const policy = contextPolicySchema.parse({
    policy: "body_budget",
    max_body_bytes: 9000,
    keep_recent_blocks: 1,
  });
  const memory = createContextMemory();
  const outcome = await decideContext(translated, policy, { ...options, memory });
  const built = await buildUpstreamBody(outcome, { target, images });
  expect(outcome.decision.policy).toBe("body_budget");
  expect(outcome.decision.reduced).toBe(true);
  expect(outcome.decision.blocks_removed.length).toBeGreaterThan(0);
  expect(outcome.decision.body_budget?.bytes_after).toBe(Buffer.byteLength(built.body));
  expect(built.body).toBe(stringifyKnowingMembers(built.chat).text);
  expect(memory.previous).toBeDefined();
  expect(afterContextFields(outcome)).toEqual({
    request: "as in the upstream request",
    decision: outcome.decision,
  });
});
