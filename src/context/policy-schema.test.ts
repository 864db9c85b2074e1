import { expect, test } from "bun:test";
import { contextPolicySchema } from "./policy-schema.ts";

test("identity is the default", () => {
  expect(contextPolicySchema.parse(undefined)).toEqual({ policy: "identity" });
});

test("sliding_window fills in defaults with target at or below max", () => {
  const policy = contextPolicySchema.parse({ policy: "sliding_window" });
  if (policy.policy !== "sliding_window") throw new Error("expected sliding_window");
  expect(policy.target_input_tokens).toBeLessThanOrEqual(policy.max_input_tokens);
  expect(policy.min_recent_tool_images).toBe(6);
  expect(policy.image_eviction_batch_size).toBe(2);
  expect(policy.keep_recent_blocks).toBeGreaterThanOrEqual(1);
});

test("target above max is rejected at target_input_tokens", () => {
  const parsed = contextPolicySchema.safeParse({
    policy: "sliding_window",
    max_input_tokens: 100,
    target_input_tokens: 101,
  });
  expect(parsed.success).toBe(false);
  expect(parsed.error?.issues[0]?.path).toEqual(["target_input_tokens"]);
});

test("misspelt keys, zero batches and unknown policies are rejected", () => {
  expect(contextPolicySchema.safeParse({ policy: "sliding_window", max_input_token: 5 }).success).toBe(false);
  expect(
    contextPolicySchema.safeParse({ policy: "sliding_window", image_eviction_batch_size: 0 }).success,
  ).toBe(false);
  expect(contextPolicySchema.safeParse({ policy: "sliding_window", keep_recent_blocks: 0 }).success).toBe(
    false,
  );
  expect(contextPolicySchema.safeParse({ policy: "truncate" }).success).toBe(false);
  expect(contextPolicySchema.safeParse({ policy: "identity", max_input_tokens: 5 }).success).toBe(false);
});
