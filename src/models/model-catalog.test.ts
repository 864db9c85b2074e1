import { describe, expect, test } from "bun:test";
import { builtinModels } from "./builtin-models.ts";
import { unservableReason } from "./model-capabilities.ts";
import { createModelCatalog } from "./model-catalog.ts";

describe("model catalog", () => {
  test("the default model resolves to its table entry", () => {
    const resolution = createModelCatalog().resolve("qwen3-vl-plus");
    expect(resolution).toEqual({
      ok: true,
      id: "qwen3-vl-plus",
      capabilities: builtinModels["qwen3-vl-plus"] as never,
    });
  });

  test("a declaration overrides a built-in model's fields one by one", () => {
    const resolution = createModelCatalog({ "qwen3-vl-plus": { max_output_tokens: 4096 } }).resolve(
      "qwen3-vl-plus",
    );
    if (!resolution.ok) throw new Error(resolution.problem);
    expect(resolution.capabilities.max_output_tokens).toBe(4096);
    expect(resolution.capabilities.context_window).toBe(262144);
  });

  test("an unknown model names the config key that would declare it", () => {
    const resolution = createModelCatalog().resolve("qwen-custom");
    expect(resolution.ok).toBe(false);
    if (!resolution.ok) expect(resolution.problem).toContain('upstream.models."qwen-custom"');
  });

  test("thinking-only and tool-less models cannot serve an episode, with the reason", () => {
    const catalog = createModelCatalog();
    const qwq = catalog.resolve("qwq-plus");
    expect(qwq.ok === false && qwq.problem).toContain("enable_thinking:false");
    const vl = catalog.resolve("qwen-vl-max");
    expect(vl.ok === false && vl.problem).toContain("tool_calls: false");
    expect(createModelCatalog({ "qwen-vl-max": { tool_calls: true } }).resolve("qwen-vl-max").ok).toBe(true);
  });

  test("every built-in entry is consistent: input within the window", () => {
    for (const [id, model] of Object.entries(builtinModels)) {
      expect(model.max_input_tokens).toBeLessThanOrEqual(model.context_window);
      expect(model.max_output_tokens).toBeLessThan(model.context_window);
      if (model.thinking !== "only" && model.tool_calls) expect(unservableReason(id, model)).toBeUndefined();
    }
  });
});
