/**
 * The window told to Claude Code puts its compaction point (told window less its output
 * reserve, at most 20,000, less its 13,000-token summary buffer) at 80% of the model's
 * largest prompt, whatever the window's size.
 */
import { expect, test } from "bun:test";
import { declaredModel } from "../../test/support/declared-model.ts";
import { claudeContextTokens } from "./claude-context-tokens.ts";
import { compactAtTokens } from "./model-limits.ts";

/** Claude Code 2.1.332's compaction point for a told window and output limit. */
const claudeCompactsAt = (told: number, maxOutput: number): number =>
  told - Math.min(maxOutput, 20_000) - 13_000;

test("a 32K model: told more than its window, so Claude Code compacts at 80% of 30,720, above its own ~15K prompt", () => {
  const model = declaredModel();
  expect(claudeContextTokens(model)).toBe(45_768);
  expect(claudeCompactsAt(claudeContextTokens(model), model.max_output_tokens)).toBe(24_576);
  // Told the real window, it would compact at 9,528: below its own prompt.
  expect(claudeCompactsAt(model.max_input_tokens, model.max_output_tokens)).toBeLessThan(15_000);
});

test("a 1M model with a 65,536-token output: the reserve counts at most 20,000; compacts at 80% of its prompt", () => {
  const model = declaredModel({
    context_window: 1_000_000,
    max_input_tokens: 991_808,
    max_output_tokens: 65_536,
  });
  const told = claudeContextTokens(model);
  expect(told).toBe(compactAtTokens(model) + 20_000 + 13_000);
  expect(told).toBeLessThan(model.max_input_tokens);
  expect(claudeCompactsAt(told, model.max_output_tokens)).toBe(compactAtTokens(model));
});
