import { expect, test } from "bun:test";
import { classifyGeminiOperation } from "./classify-operation.ts";

const classify = (method: string, path: string, query = "") =>
  classifyGeminiOperation({ method, path, query: new URLSearchParams(query), episodeModel: "ura-qwen" });

test("the episode's model: stream (SSE or JSON array), JSON and countTokens", () => {
  expect(classify("POST", "/v1beta/models/ura-qwen:streamGenerateContent", "alt=sse")).toEqual({
    kind: "generate",
    model: "ura-qwen",
    stream: true,
    sse: true,
  });
  expect(classify("POST", "/v1beta/models/ura-qwen:streamGenerateContent")).toEqual({
    kind: "generate",
    model: "ura-qwen",
    stream: true,
    sse: false,
  });
  expect(classify("POST", "/v1beta/models/ura-qwen:generateContent")).toEqual({
    kind: "generate",
    model: "ura-qwen",
    stream: false,
    sse: false,
  });
  expect(classify("POST", "/v1beta/models/ura-qwen:countTokens")).toEqual({
    kind: "count_tokens",
    model: "ura-qwen",
  });
  expect(classify("POST", "/v1beta/models/ura-qwen%3AgenerateContent").kind).toBe("generate");
});

test("a model name with a slash or a colon is split on the last colon", () => {
  const op = classifyGeminiOperation({
    method: "POST",
    path: "/v1beta/models/Qwen/Qwen3-VL:8b:generateContent",
    query: new URLSearchParams(),
    episodeModel: "Qwen/Qwen3-VL:8b",
  });
  expect(op).toEqual({ kind: "generate", model: "Qwen/Qwen3-VL:8b", stream: false, sse: false });
});

test.each([
  ["POST", "/v1beta/models/gemini-3.5-flash-lite:generateContent", "is not this episode's model"],
  ["POST", "/v1beta/models/gemini-3.5-flash-lite:countTokens", "is not this episode's model"],
  ["POST", "/v1beta/models/ura-qwen:embedContent", 'operation "embedContent"'],
  ["POST", "/v1beta/models/ura-qwen", "not supported"],
  ["GET", "/v1beta/models/ura-qwen:generateContent", "not supported"],
  ["POST", "/upload/v1beta/files", "not supported"],
  ["POST", "/v1beta/cachedContents", "not supported"],
  ["POST", "/v1beta/models", "not supported"],
  ["DELETE", "/v1beta/models/ura-qwen", "not supported"],
])("unsupported: %s %s", (method, path, reason) => {
  const op = classify(method, path);
  expect(op.kind).toBe("unsupported");
  if (op.kind === "unsupported") expect(op.reason).toContain(reason);
});

test("models.list and models.get are GETs; the name of get is kept for the route to check", () => {
  expect(classify("GET", "/v1beta/models")).toEqual({ kind: "list_models" });
  expect(classify("GET", "/v1beta/models/", "pageSize=50")).toEqual({ kind: "list_models" });
  expect(classify("GET", "/v1beta/models/gemini-2.5-flash")).toEqual({
    kind: "get_model",
    model: "gemini-2.5-flash",
  });
});
