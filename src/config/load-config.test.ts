import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { declaredModel } from "../../test/support/declared-model.ts";
import { ConfigError, loadConfig, readSecrets } from "./load-config.ts";

function configFile(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), "ura-config-")), "config.json");
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

function problemsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  test("defaults: loopback listen, scripted upstream (no url), identity context", () => {
    const config = loadConfig({}, {});
    expect(config.listen).toBe("127.0.0.1:8787");
    expect(config.upstream.url).toBeUndefined();
    expect(config.upstream.retry.max_attempts).toBeUndefined();
    expect(config.upstream.retry.max_wait_ms).toBeGreaterThanOrEqual(90_000);
    expect(config.upstream.idle_timeout_ms).toBe(90_000);
    expect(config.upstream.deadline_ms).toBe(600_000);
    expect(config.context).toEqual({ policy: "identity" });
  });

  test("the price table is optional; a bad price is refused at start-up naming its key", () => {
    expect(loadConfig({}, {}).upstream.prices).toBeUndefined();
    const file = configFile({
      upstream: { prices: { currency: "CNY", models: { "qwen3-vl-plus": { input: 1, output: "ten" } } } },
    });
    expect(problemsOf(() => loadConfig({ config: file }, {}))).toEqual([
      'upstream.prices.models.qwen3-vl-plus.output: a price per million tokens: expected a non-negative decimal such as 0.8 or "1.25", got "ten"',
    ]);
  });

  test("flags win over environment, which wins over the file", () => {
    const file = configFile({
      listen: "127.0.0.1:1000",
      upstream: { model: "qwen-max", idle_timeout_ms: 5 },
    });
    const env = { URA_LISTEN: "127.0.0.1:2000", URA_MODEL: "qwen3-vl-flash" };
    const config = loadConfig({ config: file, listen: "127.0.0.1:3000" }, env);
    expect(config.listen).toBe("127.0.0.1:3000");
    expect(config.upstream.model).toBe("qwen3-vl-flash");
    expect(config.upstream.idle_timeout_ms).toBe(5);
  });

  test("a context policy named by flag or environment replaces the file's other policy, with its own defaults", () => {
    const file = configFile({
      context: { policy: "sliding_window", max_input_tokens: 1000, target_input_tokens: 900 },
    });
    const bodyBudget = {
      policy: "body_budget" as const,
      min_recent_tool_images: 6,
      image_eviction_batch_size: 1,
      keep_recent_blocks: 2,
      low_water_fraction: 0.6,
    };
    expect(loadConfig({ config: file, "context-policy": "body_budget" }, {}).context).toEqual(bodyBudget);
    expect(loadConfig({ config: file }, { URA_CONTEXT_POLICY: "body_budget" }).context).toEqual(bodyBudget);
    // The same name keeps the file's settings of that policy.
    expect(loadConfig({ config: file, "context-policy": "sliding_window" }, {}).context).toMatchObject({
      policy: "sliding_window",
      max_input_tokens: 1000,
      target_input_tokens: 900,
    });
  });

  test("each bad key is named", () => {
    const file = configFile({
      listen: "nowhere",
      upstream: { retry: { max_attempts: 0 }, colour: "red" },
      bogus: 1,
    });
    const problems = problemsOf(() => loadConfig({ config: file }, {}));
    expect(problems.some((p) => p.startsWith("listen:"))).toBe(true);
    expect(problems.some((p) => p.startsWith("upstream.retry.max_attempts:"))).toBe(true);
    expect(problems.some((p) => p.includes("upstream.colour") && p.includes("unknown key"))).toBe(true);
    expect(problems.some((p) => p.includes("bogus") && p.includes("unknown key"))).toBe(true);
  });

  test("the shared upstream budget: 8 in flight and no rate limit by default; bad values named by key", () => {
    expect(loadConfig({}, {}).upstream.budget).toEqual({ max_concurrent: 8 });
    const good = configFile({
      upstream: { budget: { max_concurrent: 4, requests_per_minute: 60, tokens_per_minute: 100_000 } },
    });
    expect(loadConfig({ config: good }, {}).upstream.budget).toEqual({
      max_concurrent: 4,
      requests_per_minute: 60,
      tokens_per_minute: 100_000,
    });
    const bad = configFile({
      upstream: { budget: { max_concurrent: 0, requests_per_minute: -1, tokens_per_minute: 1.5, burst: 3 } },
    });
    const problems = problemsOf(() => loadConfig({ config: bad }, {}));
    for (const key of ["max_concurrent", "requests_per_minute", "tokens_per_minute"])
      expect(problems.some((p) => p.startsWith(`upstream.budget.${key}:`))).toBe(true);
    expect(problems.some((p) => p.includes("upstream.budget.burst") && p.includes("unknown key"))).toBe(true);
  });

  test("the replaced upstream.timeout_ms is refused, naming its replacements", () => {
    const problems = problemsOf(() =>
      loadConfig({ config: configFile({ upstream: { timeout_ms: 120_000 } }) }, {}),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toStartWith("upstream.timeout_ms:");
    expect(problems[0]).toContain("upstream.idle_timeout_ms");
    expect(problems[0]).toContain("upstream.deadline_ms");
    const retry = problemsOf(() =>
      loadConfig({ config: configFile({ upstream: { retry: { retry_statuses: [429] } } }) }, {}),
    );
    expect(retry[0]).toStartWith("upstream.retry.retry_statuses:");
  });

  test("upstream timings that contradict each other are named", () => {
    const problems = (upstream: unknown) =>
      problemsOf(() => loadConfig({ config: configFile({ upstream }) }, {}));
    expect(problems({ deadline_ms: -1 })[0]).toStartWith("upstream.deadline_ms:");
    expect(
      problems({ deadline_ms: 60_000, idle_timeout_ms: 90_000, retry: { max_wait_ms: 30_000 } }),
    ).toEqual([expect.stringMatching(/^upstream\.idle_timeout_ms: .*upstream\.deadline_ms/)]);
    expect(problems({ deadline_ms: 60_000, idle_timeout_ms: 1000 })[0]).toMatch(
      /^upstream\.retry\.max_wait_ms: .*upstream\.deadline_ms/,
    );
    expect(problems({ retry: { initial_backoff_ms: 5000, max_backoff_ms: 1000 } })[0]).toStartWith(
      "upstream.retry.initial_backoff_ms:",
    );
  });

  test("a bad upstream URL from the environment is named", () => {
    const problems = problemsOf(() => loadConfig({}, { URA_UPSTREAM_URL: "not a url" }));
    expect(problems[0]).toStartWith("upstream.url:");
  });

  test("thinking-only models are refused at config time", () => {
    const problems = problemsOf(() => loadConfig({ model: "qwq-plus" }, {}));
    expect(problems[0]).toContain("upstream.model");
    expect(problems[0]).toContain("enable_thinking");
    expect(() => loadConfig({ model: "qwen3-235b-a22b-thinking-2507" }, {})).toThrow(ConfigError);
    expect(loadConfig({ model: "qwen3-vl-plus" }, {}).upstream.model).toBe("qwen3-vl-plus");
  });

  test("--upstream-profile (or URA_UPSTREAM_PROFILE) picks the scripted upstream's profile; refused with a real url", () => {
    expect(loadConfig({ "upstream-profile": "loaded" }, {}).upstream.scripted_profile).toBe("loaded");
    expect(loadConfig({}, { URA_UPSTREAM_PROFILE: "instant" }).upstream.scripted_profile).toBe("instant");
    expect(problemsOf(() => loadConfig({ "upstream-profile": "busy" }, {}))[0]).toContain(
      "upstream.scripted_profile",
    );
    const withUrl = problemsOf(() =>
      loadConfig({ "upstream-profile": "loaded", "upstream-url": "https://example.test/v1" }, {}),
    );
    expect(withUrl[0]).toContain("upstream.scripted_profile");
    const file = configFile({ upstream: { scripted_profile: { base: "loaded", head_ms: -5 } } });
    expect(problemsOf(() => loadConfig({ config: file }, {}))[0]).toContain(
      "upstream.scripted_profile.head_ms",
    );
  });

  test("a model outside the built-in table is refused until upstream.models declares it", () => {
    const problems = problemsOf(() => loadConfig({ model: "qwen-custom-32k" }, {}));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toStartWith("upstream.model:");
    expect(problems[0]).toContain('upstream.models."qwen-custom-32k"');
    const partial = configFile({ upstream: { models: { "qwen-custom-32k": { context_window: 32768 } } } });
    const missing = problemsOf(() => loadConfig({ config: partial, model: "qwen-custom-32k" }, {}));
    expect(missing[0]).toStartWith("upstream.models.qwen-custom-32k:");
    expect(missing[0]).toContain("max_input_tokens, max_output_tokens, image_input");
    const declared = declaredModel();
    const file = configFile({
      upstream: { model: "qwen-custom-32k", models: { "qwen-custom-32k": declared } },
    });
    expect(loadConfig({ config: file }, {}).upstream.models["qwen-custom-32k"]).toEqual(declared as never);
  });

  test("the retired upstream.image_input and upstream.max_output_tokens name their replacement", () => {
    const file = configFile({ upstream: { image_input: false, max_output_tokens: 4096 } });
    const problems = problemsOf(() => loadConfig({ config: file }, {}));
    expect(problems).toHaveLength(2);
    for (const key of ["image_input", "max_output_tokens"]) {
      const problem = problems.find((p) => p.startsWith(`upstream.${key}:`));
      expect(problem).toContain(`upstream.models.<model id>.${key}`);
    }
  });

  test("a built-in model's declaration changes only the fields it names", () => {
    const file = configFile({ upstream: { models: { "qwen3-vl-plus": { max_output_tokens: 4096 } } } });
    expect(loadConfig({ config: file }, {}).upstream.models).toEqual({
      "qwen3-vl-plus": { max_output_tokens: 4096 },
    });
    const thinking = configFile({ upstream: { models: { "qwen3-vl-plus": { thinking: "only" } } } });
    const problems = problemsOf(() => loadConfig({ config: thinking }, {}));
    expect(
      problems.some((p) => p.startsWith("upstream.models.qwen3-vl-plus:") && p.includes("thinking-only")),
    ).toBe(true);
  });

  test("an unreadable or non-JSON file is named", () => {
    expect(problemsOf(() => loadConfig({ config: "/nonexistent/ura.json" }, {}))[0]).toContain(
      "/nonexistent/ura.json",
    );
    expect(problemsOf(() => loadConfig({ config: configFile("{nope") }, {}))[0]).toContain("not valid JSON");
  });

  test("secrets come from the environment only and never enter the config", () => {
    const env = { URA_UPSTREAM_API_KEY: "sk-secret", URA_CONTROL_PASSWORD: "pw-secret" };
    expect(readSecrets(env)).toEqual({ upstreamApiKey: "sk-secret", controlPassword: "pw-secret" });
    expect(JSON.stringify(loadConfig({}, env))).not.toContain("secret");
  });
});
