/**
 * The provider's cache usage reaches each client in its own protocol's usage fields:
 * read from the upstream's final usage chunk into the hub answer, then rendered as
 * Responses `input_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens` /
 * `cache_creation_input_tokens` (with `input_tokens` the uncached rest), Gemini
 * `cachedContentTokenCount`.
 */
import { describe, expect, test } from "bun:test";
import { hubResponse } from "../../test/support/hub-kit.ts";
import { emptyChatAnswer, foldChatChunk, validateChatAnswer } from "../upstream/accumulate-chat-stream.ts";
import { usageMetadata } from "./gemini/from-hub.ts";
import { toUsage as messagesUsage } from "./messages/from-hub.ts";
import { toUsage as responsesUsage } from "./responses/from-hub.ts";

function answerWithUsage(usage: object) {
  const answer = emptyChatAnswer();
  foldChatChunk(
    answer,
    JSON.stringify({
      id: "c1",
      model: "qwen",
      choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }],
    }),
  );
  foldChatChunk(answer, JSON.stringify({ id: "c1", model: "qwen", choices: [], usage }));
  foldChatChunk(answer, "[DONE]");
  return validateChatAnswer(answer, new Set(), () => "x");
}

describe("cache usage from the upstream", () => {
  test("cached_tokens and cache_creation_input_tokens in prompt_tokens_details become the hub's figures", () => {
    const response = answerWithUsage({
      prompt_tokens: 10_000,
      completion_tokens: 12,
      prompt_tokens_details: {
        cached_tokens: 7_000,
        cache_creation_input_tokens: 2_500,
        cache_type: "ephemeral",
      },
    });
    expect(response.usage).toEqual({
      inputTokens: 10_000,
      outputTokens: 12,
      cachedInputTokens: 7_000,
      cacheCreationInputTokens: 2_500,
    });
  });

  test("no details: no cache figures; figures over the prompt are cut to it", () => {
    expect(answerWithUsage({ prompt_tokens: 5, completion_tokens: 1 }).usage).toEqual({
      inputTokens: 5,
      outputTokens: 1,
    });
    expect(
      answerWithUsage({
        prompt_tokens: 100,
        completion_tokens: 1,
        prompt_tokens_details: { cached_tokens: 150, cache_creation_input_tokens: 10 },
      }).usage,
    ).toEqual({ inputTokens: 100, outputTokens: 1, cachedInputTokens: 100 });
  });
});

describe("cache usage to each client", () => {
  const response = hubResponse({
    usage: {
      inputTokens: 10_000,
      outputTokens: 12,
      cachedInputTokens: 7_000,
      cacheCreationInputTokens: 2_500,
    },
  });

  test("Responses: input_tokens counts everything, input_tokens_details.cached_tokens the cached part", () => {
    expect(responsesUsage(response)).toMatchObject({
      input_tokens: 10_000,
      input_tokens_details: { cached_tokens: 7_000 },
      total_tokens: 10_012,
    });
  });

  test("Anthropic Messages: cache_read_input_tokens, cache_creation_input_tokens, input_tokens the rest", () => {
    expect(messagesUsage(response)).toEqual({
      input_tokens: 500,
      output_tokens: 12,
      cache_read_input_tokens: 7_000,
      cache_creation_input_tokens: 2_500,
    });
  });

  test("Gemini: cachedContentTokenCount within promptTokenCount", () => {
    expect(usageMetadata(response)).toEqual({
      promptTokenCount: 10_000,
      candidatesTokenCount: 12,
      totalTokenCount: 10_012,
      cachedContentTokenCount: 7_000,
    });
  });

  test("without cache figures every protocol says 0 cached (and Gemini leaves the field out)", () => {
    const plain = hubResponse({ usage: { inputTokens: 40, outputTokens: 2 } });
    expect(responsesUsage(plain).input_tokens_details.cached_tokens).toBe(0);
    expect(messagesUsage(plain)).toMatchObject({ input_tokens: 40, cache_read_input_tokens: 0 });
    expect(usageMetadata(plain).cachedContentTokenCount).toBeUndefined();
  });
});
